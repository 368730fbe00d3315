"""The per-message shortcuts of the server: the JSON depth check skipped only where no value
can be too deep, and the collector's settings applied while an app serves and undone after."""

from __future__ import annotations

import gc

import pytest
from starlette.testclient import TestClient

from agentgym.server import checks, create_app, gcpolicy
from agentgym.server.sessions import ServerLimits, SessionError

LIMITS = ServerLimits(max_json_depth=3)


@pytest.mark.parametrize("kind", [str, bytes])
def test_depth_is_checked_whenever_the_brackets_could_nest_past_the_limit(kind):
    def raw(text: str):
        return text if kind is str else text.encode()

    assert checks.parse_json(raw('{"a": {"b": [1]}}'), LIMITS) == {"a": {"b": [1]}}  # 3 deep
    with pytest.raises(SessionError) as exc:
        checks.parse_json(raw('{"a": {"b": [[1]]}}'), LIMITS)  # 4 brackets, 4 deep
    assert exc.value.field == "a.b[0]" and exc.value.code == "INVALID_JSON"
    # many brackets, all inside strings or side by side: the walk runs and lets it through
    shallow = '{"t": "[[[[{{{{", "u": [1], "v": [2], "w": {}}'
    assert checks.parse_json(raw(shallow), LIMITS)["t"] == "[[[[{{{{"


@pytest.fixture
def restored_gc(monkeypatch):
    """The collector as it was, and the policy's count of serving apps starting from none
    (an app of an earlier test that never ran its shutdown must not count here)."""
    monkeypatch.setattr(gcpolicy, "_running", 0)
    monkeypatch.setattr(gcpolicy, "_saved", None)
    monkeypatch.setattr(gcpolicy, "_we_froze", False)
    before = gc.get_threshold()
    yield before
    gc.set_threshold(*before)
    gc.unfreeze()


def test_the_collector_is_tuned_while_apps_serve_and_restored_after(restored_gc):
    gc.set_threshold(700, 10, 10)
    gcpolicy.serving_started()
    assert gc.get_threshold() == (gcpolicy.YOUNG_THRESHOLD, 10, 10)
    assert gc.get_freeze_count() > 0  # the heap that existed at start is out of view
    gcpolicy.serving_started()  # a second app in the same process
    gcpolicy.serving_stopped()
    assert gc.get_threshold() == (gcpolicy.YOUNG_THRESHOLD, 10, 10)  # one app still serves
    gcpolicy.serving_stopped()
    assert gc.get_threshold() == (700, 10, 10)
    assert gc.get_freeze_count() == 0
    gcpolicy.serving_stopped()  # an extra stop changes nothing
    assert gc.get_threshold() == (700, 10, 10)


def test_a_higher_threshold_set_by_the_user_is_kept(restored_gc):
    gc.set_threshold(50_000, 5, 5)
    gcpolicy.serving_started()
    assert gc.get_threshold() == (50_000, 5, 5)
    gcpolicy.serving_stopped()
    assert gc.get_threshold() == (50_000, 5, 5)


def in_view(obj: object) -> bool:
    """Whether the collector sees ``obj`` (frozen objects are not in gc.get_objects())."""
    return any(o is obj for o in gc.get_objects())


def test_a_freeze_made_by_the_process_itself_is_left_alone(restored_gc):
    early = [[]]
    gc.freeze()
    assert not in_view(early)
    late = [[]]  # made after the process's own freeze
    gcpolicy.serving_started()
    assert in_view(late)  # serving froze nothing more
    gcpolicy.serving_stopped()
    assert not in_view(early)  # and thawed nothing when it ended
    assert gc.get_freeze_count() > 0


def test_an_app_applies_the_settings_for_its_lifespan(restored_gc):
    gc.set_threshold(700, 10, 10)
    with TestClient(create_app("agentgym/Sokoban-Tiny-v0")) as client:
        assert gc.get_threshold()[0] == gcpolicy.YOUNG_THRESHOLD
        with client.websocket_connect("/ws") as ws:
            ws.send_json({"type": "reset", "data": {"seed": 3}})
            assert ws.receive_json()["type"] == "observation"
    assert gc.get_threshold() == (700, 10, 10)
