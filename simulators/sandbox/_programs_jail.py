"""The code :mod:`.programs` ships into the jail (its source text is appended to a run).

Nothing here is imported by the host except the codec, which the host uses to show values.
Every name starts with ``_agentgym`` / ``_Agentgym`` so it cannot clash with a
solution's own names. Three drivers, one per grading phase:

* ``_agentgym_reference(entry, program)`` — runs a test program against the reference
  solution with ``entry`` wrapped by a tracer: returns the calls made (arguments encoded),
  the reference's result for each, and each assert's verdict.
* ``_agentgym_call(entry, key)`` — calls the candidate's ``entry`` on one recorded call and
  returns its result, encoded (run after the candidate's code, in its own process).
* ``_agentgym_verdicts(entry, program, table)`` — runs the test program again, with ``entry``
  replaced by a stub that answers each call from ``table`` (the candidate's encoded
  results): no candidate code runs in this process, so the verdicts are the test's own.

Values travel as JSON text with exact types (``_AgentgymCodec``): tuples stay tuples, sets
stay sets, floats keep their bits; anything else (a custom class) cannot be encoded.
Modules are imported inside the functions, so appending this to a solution rebinds none of
the solution's own global names.
"""


class _AgentgymCodec:
    """Plain Python values <-> JSON text, keeping exact builtin types."""

    MAX_DEPTH = 100
    MAX_CHARS = 1 << 20

    @staticmethod
    def tree(value, depth=0):
        if depth > _AgentgymCodec.MAX_DEPTH:
            raise ValueError("value nested too deeply")
        kind = type(value)
        if value is None or kind is bool or kind is str:
            return value
        if kind is int:
            return value if -(1 << 62) < value < (1 << 62) else ["I", hex(value)]
        if kind is float:
            return ["f", value.hex()]
        if kind is complex:
            return ["c", value.real.hex(), value.imag.hex()]
        if kind is bytes:
            return ["b", value.hex()]
        tags = {list: "l", tuple: "t", set: "s", frozenset: "z"}
        if kind in tags:
            items = value if kind in (list, tuple) else sorted(value, key=repr)
            return [tags[kind], [_AgentgymCodec.tree(v, depth + 1) for v in items]]
        if kind is dict:
            pairs = [
                [_AgentgymCodec.tree(k, depth + 1), _AgentgymCodec.tree(v, depth + 1)]
                for k, v in value.items()
            ]
            return ["d", pairs]
        raise TypeError(f"a value of type {kind.__name__} is not plain data")

    @staticmethod
    def encode(value):
        import json

        text = json.dumps(_AgentgymCodec.tree(value), ensure_ascii=False)
        if len(text) > _AgentgymCodec.MAX_CHARS:
            raise ValueError(f"value too large ({len(text)} characters encoded)")
        return text

    @staticmethod
    def value(tree):
        if not isinstance(tree, list):
            return tree
        tag = tree[0]
        if tag == "I":
            return int(tree[1], 16)
        if tag == "f":
            return float.fromhex(tree[1])
        if tag == "c":
            return complex(float.fromhex(tree[1]), float.fromhex(tree[2]))
        if tag == "b":
            return bytes.fromhex(tree[1])
        if tag == "d":
            return {_AgentgymCodec.value(k): _AgentgymCodec.value(v) for k, v in tree[1]}
        items = [_AgentgymCodec.value(v) for v in tree[1]]
        return {"l": list, "t": tuple, "s": set, "z": frozenset}[tag](items)

    @staticmethod
    def json(obj, load=False):
        """Plain JSON in and out (for the drivers' own messages)."""
        import json

        return json.loads(obj) if load else json.dumps(obj, ensure_ascii=False)

    @staticmethod
    def decode(text):
        import json

        return _AgentgymCodec.value(json.loads(text))


def _agentgym_error(exc):
    return f"{type(exc).__name__}: {exc}"[:500]


class _AgentgymRun:
    """One test program's run: its verdicts, and the calls made inside each assert."""

    def __init__(self):
        self.verdicts = []
        self.current = None
        self.error = None

    def check(self, k, thunk):
        self.current = []
        try:
            ok = bool(thunk())
        except BaseException:
            ok = False
        self.verdicts.append([k, ok, self.current])
        self.current = None

    def execute(self, program):
        import random

        g = globals()
        g["_agentgym_assert"] = self.check
        random.seed(0)
        try:
            exec(compile(program, "<tests>", "exec"), g)
        except BaseException as exc:
            self.error = _agentgym_error(exc)

    def note(self, key):
        if self.current is not None:
            self.current.append(key)


def _agentgym_original(entry):
    g = globals()
    originals = g.setdefault("_agentgym_originals", {})
    if entry not in originals:
        originals[entry] = g[entry]
    return originals[entry]


def _agentgym_reference(entry, program):
    """Run ``program`` with ``entry`` traced; returns calls, results, verdicts (JSON text)."""
    fn = _agentgym_original(entry)
    run = _AgentgymRun()
    calls, results, depth = [], {}, [0]

    def traced(*args, **kwargs):
        if depth[0]:
            return fn(*args, **kwargs)
        try:
            key = _AgentgymCodec.encode([list(args), kwargs])
        except (TypeError, ValueError) as exc:
            key = None
            results.setdefault("", ["unreplayable", _agentgym_error(exc)])
        if key is not None:
            run.note(key)
        depth[0] += 1
        try:
            value = fn(*args, **kwargs)
        except BaseException as exc:
            if key is not None and key not in results:
                calls.append(key)
                results[key] = ["raised", _agentgym_error(exc)]
            raise
        finally:
            depth[0] -= 1
        if key is not None and key not in results:
            calls.append(key)
            try:
                results[key] = ["ok", _AgentgymCodec.encode(value)]
            except (TypeError, ValueError) as exc:
                results[key] = ["unencodable", _agentgym_error(exc)]
        return value

    globals()[entry] = traced
    run.execute(program)
    out = {"calls": calls, "results": results, "verdicts": run.verdicts, "error": run.error}
    return _AgentgymCodec.json(out)


def _agentgym_call(entry, key):
    """The candidate's ``entry`` on one recorded call; its result, encoded."""
    args, kwargs = _AgentgymCodec.decode(key)
    fn = globals().get(entry)
    if not callable(fn):
        raise NameError(f"function {entry!r} is not defined")
    return _AgentgymCodec.encode(fn(*args, **kwargs))


class _AgentgymCandidateError(Exception):
    """What the stub raises where the candidate raised (or gave no result)."""


def _agentgym_verdicts(entry, program, table):
    """Run ``program`` with ``entry`` answering from ``table``; returns verdicts (JSON text)."""
    _agentgym_original(entry)
    answers = _AgentgymCodec.json(table, load=True)
    run = _AgentgymRun()

    def stub(*args, **kwargs):
        key = _AgentgymCodec.encode([list(args), kwargs])
        run.note(key)
        found = answers.get(key)
        if found is None:
            raise _AgentgymCandidateError("no result for this call")
        if found[0] != "ok":
            raise _AgentgymCandidateError(found[1])
        return _AgentgymCodec.decode(found[1])

    globals()[entry] = stub
    run.execute(program)
    return _AgentgymCodec.json({"verdicts": run.verdicts, "error": run.error})
