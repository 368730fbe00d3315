"""Stateful sessions: state persists, forks are independent, lost sessions are rebuilt."""

from __future__ import annotations

import pytest
from agentgym.simulators.sandbox import SandboxPool, Session
from agentgym.simulators.sandbox.session import FRESH_DIGEST

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("no_leaks")]


def test_variables_persist_and_last_expression_is_shown(pool: SandboxPool) -> None:
    with pool.session() as s:
        assert s.run("x = 40\ny = 2").stdout == ""
        assert s.run("x + y").stdout == "42\n"
        assert s.run("import numpy as np\nprint(np.arange(4).sum())").stdout == "6\n"


def test_errors_are_reported_and_state_survives(pool: SandboxPool) -> None:
    with pool.session() as s:
        s.run("a = 1")
        r = s.run("a = 2\n1 / 0")
        assert r.status == "error" and "ZeroDivisionError" in r.stderr
        assert s.run("a").stdout == "2\n"


def test_fork_is_an_independent_copy(pool: SandboxPool) -> None:
    with pool.session() as s:
        s.run("data = [1, 2, 3]")
        f = s.fork()
        try:
            s.run("data.append(4)")
            f.run("data.append(99)")
            assert s.run("data").stdout == "[1, 2, 3, 4]\n"
            assert f.run("data").stdout == "[1, 2, 3, 99]\n"
            r = f.run("data[9]")  # the copy's errors come back on its own stderr
            assert r.status == "error" and "IndexError" in r.stderr, r
            assert s.run("print('parent')").stderr == ""
            g = f.fork()
            try:
                assert g.run("data").stdout == "[1, 2, 3, 99]\n"
            finally:
                g.close()
        finally:
            f.close()


def test_fork_survives_parent_close(pool: SandboxPool) -> None:
    s = pool.session()
    s.run("z = 'kept'")
    f = s.fork()
    s.close()
    try:
        assert f.run("z").stdout == "'kept'\n"
    finally:
        f.close()


def test_timeout_kills_cell_and_history_replay_rebuilds(pool: SandboxPool) -> None:
    with pool.session() as s:
        s.run("counter = 5")
        r = s.run("while True: pass", timeout=0.5)
        assert r.status == "timeout"
        assert s.run("counter").stdout == "5\n"
        assert s.rebuilds == 1


def test_sessions_cannot_see_each_other(pool: SandboxPool) -> None:
    """Two sessions in the same worker (same jail): other uid, other work dir, no signals."""
    a = pool.session()
    b = Session(pool, a.worker, None, dict(a.limits), [])
    with a, b:
        a.run("open('secret.txt', 'w').write('hidden'); import os; where = os.getcwd()")
        where = a.run("where").stdout.strip().strip("'")
        r = b.run(f"open({where!r} + '/secret.txt').read()")
        assert r.status == "error" and "PermissionError" in r.stderr
        r = b.run("import os, signal\nos.kill(-1, signal.SIGKILL)")
        assert a.run("1 + 1").stdout == "2\n"


def test_digest_tracks_values_not_history(pool: SandboxPool) -> None:
    with pool.session() as a, pool.session() as b:
        a.run("x = 1")
        a.run("x = 2")
        b.run("x = 2")
        assert a.digest() == b.digest()
        b.run("y = 0")
        assert a.digest() != b.digest()


def test_a_slow_digest_within_the_session_timeout_keeps_the_session(pool: SandboxPool) -> None:
    """The digest waits as long as a cell may (the session's timeout): a value whose repr
    takes 6 s, past the few seconds a fixed digest deadline allowed, still gives a digest,
    with the cell and asked alone, and the session and its variables live on (a cut digest
    kills the session)."""
    slow = "import time\nclass Slow:\n    def __repr__(self):\n        time.sleep(6)\n        return 'slow'\n"
    with pool.session(timeout=30.0) as s:
        assert s.run(slow + "x = 41\nbox = [Slow()]").ok
        assert s.digest() != ""
        assert _asked(s) == s.digest()
        assert s.run("x + 1").stdout == "42\n"


def test_values_and_names_that_break_their_own_methods_do_not_end_the_session(
    pool: SandboxPool,
) -> None:
    """The session's digest describes objects the agent's code made: a str whose repr
    raises, a list whose len raises, an object whose ``__class__`` raises, a name that is a
    str subclass refusing comparison. Each is described by its type; the digest comes, the
    session and its variables live on (before, the digest op ended the session)."""
    hostile = (
        "class BadStr(str):\n    def __repr__(self):\n        raise RuntimeError('repr')\n"
        "class BadList(list):\n    def __len__(self):\n        raise RuntimeError('len')\n"
        "class Liar:\n    @property\n    def __class__(self):\n        raise RuntimeError('cls')\n"
        "class BadName(str):\n    def __lt__(self, other):\n        raise RuntimeError('lt')\n"
        "    __gt__ = __lt__\n    def __hash__(self):\n        return str.__hash__(self)\n"
        "kept = 41\nword = BadStr('w')\nbox = BadList([1])\nliar = Liar()\n"
        "globals()[BadName('zz')] = 1\nglobals()[BadName('aa')] = 2\n"
    )
    with pool.session() as s:
        assert s.run(hostile).ok
        first = _asked(s)
        assert first != "" and _asked(s) == first  # the same objects, the same digest
        assert s.run("kept + 1").stdout == "42\n"
        assert s.rebuilds == 0
        s.run("kept = 0")
        assert _asked(s) != first  # and it still tracks the plain values


def _asked(s: Session) -> str:
    """The digest the session process computes now (the worker's op, not the handle's)."""
    t = float(s.limits["timeout"])
    reply = s.worker.call({"op": "session_digest", "sid": s._sid, "timeout": t}, t)
    assert reply["status"] == "ok", reply
    return str(reply["digest"])


def _count_calls(s: Session, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ops the handle sends to its worker from now on."""
    ops: list[str] = []
    call = s.worker.call

    def counted(req: dict, timeout: float) -> dict:
        ops.append(req["op"])
        return call(req, timeout)

    monkeypatch.setattr(s.worker, "call", counted)
    return ops


def test_a_new_sessions_digest_is_known_without_asking(
    pool: SandboxPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session no cell ran in holds what every new one holds: ``reset`` of a code env
    (its ``state_key``) asks the session nothing, and gets what the session would say."""
    with pool.session() as s:
        ops = _count_calls(s, monkeypatch)
        assert s.digest() == FRESH_DIGEST and ops == []
        assert _asked(s) == FRESH_DIGEST
        copy = s.fork()
        with copy:
            assert copy.digest() == FRESH_DIGEST == _asked(copy)


def test_a_cells_reply_carries_the_digest_of_what_it_left(
    pool: SandboxPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a cell, ``digest()`` needs no second round trip: the cell's reply carried it,
    after an error too (its assignments stay); a fork starts with its parent's; a cell
    that is stopped leaves nothing known, and the rebuilt session is asked."""
    with pool.session() as s:
        ops = _count_calls(s, monkeypatch)
        assert s.run("x = 1").ok
        one = s.digest()
        assert ops == ["session_run"] and one != FRESH_DIGEST and one == _asked(s)
        r = s.run("x = 2\n1 / 0")
        assert r.status == "error"
        two = s.digest()
        assert two not in (one, FRESH_DIGEST) and two == _asked(s)
        copy = s.fork()
        with copy:
            del ops[:]
            assert copy.digest() == two and ops == []
            assert copy.run("x = 1").ok and copy.digest() == one
        assert s.run("while True: pass", timeout=0.5).status == "timeout"
        del ops[:]
        assert s.digest() == two  # replayed: x = 1, then x = 2 and the error
        assert "session_digest" in ops and s.rebuilds == 1


def test_a_value_whose_repr_fails_costs_the_cell_nothing(pool: SandboxPool) -> None:
    """A cell may leave a value whose ``repr`` raises: the cell's own reply is unharmed
    (no digest rides on it), ``digest()`` does not raise, and the session goes on."""
    bad = "class Bad(str):\n    def __repr__(self):\n        raise RuntimeError('no')\nb = Bad('x')"
    with pool.session() as s:
        r = s.run(bad)
        assert r.status == "ok", r
        assert isinstance(s.digest(), str)
        assert s.run("1 + 1").stdout == "2\n"


def test_an_int_past_the_digit_limit_has_a_digest(pool: SandboxPool) -> None:
    """An int too long for ``repr`` (Python's int-to-str digit limit) does not break the
    session's digest, and two such ints of different sizes digest differently."""
    with pool.session() as a, pool.session() as b:
        assert a.run("n = 10 ** 5000").ok and b.run("n = 10 ** 6000").ok
        da, db = a.digest(), b.digest()
        assert da and db and da != db
        assert a.run("len(str(n % 1000))").stdout == "1\n"


def test_closed_session_processes_are_gone(pool: SandboxPool) -> None:
    s = pool.session()
    s.run("import os\nif os.fork() == 0:\n    import time\n    time.sleep(1000)")
    s.close()
    s.close()  # idempotent; the no_leaks fixture checks no process of its uid is left
