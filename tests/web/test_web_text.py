"""Browser-free parts of the web family: DOM mirror, text browser, sites, rewards, text envs."""

from __future__ import annotations

import gymnasium as gym
import pytest
from agentgym.envs.web.tasks import KindSeedTaskSet
from agentgym.simulators.browser.actions import check_path
from agentgym.simulators.browser.dom import TextBrowser, TextDocument
from agentgym.simulators.browser.site import Request, Response, Site, page
from agentgym.simulators.browser.sites.catalog import get_catalog
from agentgym.simulators.browser.sites.forms import FormSite, validate
from agentgym.simulators.browser.sites.shop import ShopGoal, make_goal, shop_reward
from agentgym.simulators.browser.sites.widgets import KINDS, make_task

import agentgym  # noqa: F401
from agentgym.error import InvalidConfigError
from agentgym.parsing import render_tool_call

TEXT_IDS = [
    "agentgym/WebShopText-v0",
    "agentgym/WebFormsText-v0",
    "agentgym/WebWikiText-v0",
    "agentgym/WebTodoText-v0",
]


def call(name: str, **args: object) -> str:
    return render_tool_call(name, args)


class TinySite(Site):
    def reset(self, seed, task):
        self.sent = []

    def handle(self, r: Request) -> Response:
        if r.path == "/":
            return Response(
                page(
                    "Home",
                    (
                        "<p>Hello <b>world</b></p><a href='/next?x=a b'>Next</a>"
                        "<div hidden><button>Ghost</button></div>"
                        "<form method='post' action='/send'><input name='q' aria-label='Query' maxlength='5'>"
                        "<select name='c' aria-label='Color'><option>red</option><option selected>blue</option></select>"
                        "<input type='checkbox' name='k' aria-label='Keep'>"
                        "<button type='submit'>Send</button></form><a href='https://example.com/'>Out</a>"
                    ),
                )
            )
        if r.path == "/send":
            self.sent.append(r.form)
            return Response(redirect="/next?sent=1")
        return Response(page("Next", "<p>next page</p>"))

    def dump(self):
        return {"sent": self.sent}

    def load(self, s):
        self.sent = s["sent"]


def test_observation_lists_elements_in_document_order_with_state():
    doc = TextDocument("/", TinySite().handle(Request("GET", "/")).html)
    obs = doc.observe()
    assert obs.title == "Home"
    assert obs.lines[:3] == ["Hello", "world", '[0] link "Next"']
    assert '[2] combobox "Color" value="blue" options=["red","blue"]' in obs.lines
    assert '[3] checkbox "Keep" unchecked' in obs.lines
    assert not any("Ghost" in line for line in obs.lines), "hidden elements are not listed"
    again = doc.observe()
    assert again.lines == obs.lines, "ids are stable for the page's lifetime"


def test_text_browser_fills_submits_and_goes_back():
    site = TinySite()
    site.reset(0, {})
    tb = TextBrowser(site)
    assert tb.open("/") is None
    assert tb.fill("1", "toolongtext") is None
    assert tb.observe().elements[1]["value"] == "toolo", "maxlength is honoured"
    assert tb.select("2", "red") is None
    assert tb.set_checked("3", True) is None
    assert tb.click("4") is None
    assert site.sent == [{"q": ["toolo"], "c": ["red"], "k": ["on"]}]
    assert tb.observe().url == "/next?sent=1"
    assert tb.back() is None and tb.observe().url == "/"
    assert "no element" in (tb.click("99") or "")
    assert "outside the site" in (tb.click("5") or "")


@pytest.mark.parametrize(
    "path",
    [
        "https://example.com/",
        "file:///etc/passwd",
        "javascript:alert(1)",
        "//evil.com/x",
        "x",
        "",
        "/a\x00b",
    ],
)
def test_goto_rejects_anything_but_site_paths(path):
    assert check_path(path) is not None


def test_goto_accepts_site_paths():
    assert check_path("/search?q=red shoes") is None


def test_kind_seed_task_set_is_disjoint_and_parseable():
    train = KindSeedTaskSet("widget", KINDS, 0, 10)
    test = KindSeedTaskSet("widget", KINDS, 10, 5)
    assert len(train) == 10 * len(KINDS)
    assert train[0] == f"widget-{KINDS[0]}-0" and train[0] in train and train[0] not in test
    assert all(t in test for t in test)
    assert "widget-nope-1" not in train and "other" not in train


def test_widget_tasks_are_pure_functions_of_kind_and_seed():
    assert len(KINDS) >= 20
    for kind in KINDS:
        a, b = make_task(kind, 7), make_task(kind, 7)
        assert (a.instruction, a.body, a.expected) == (b.instruction, b.body, b.expected)
    assert make_task("click-button", 1).body != make_task("click-button", 2).body


def test_catalog_is_deterministic_and_searchable():
    cat = get_catalog(0, 3000)
    assert len(cat.products) == 3000
    assert [p.asin for p in cat.search("waterproof running shoes")[:5]] == [
        p.asin for p in cat.search("waterproof running shoes")[:5]
    ]
    top = cat.search("waterproof running shoes")[0]
    assert top.type == "running shoes" and "waterproof" in top.attributes
    assert cat.search("qqqqzzzz") == []


def test_shop_reward_follows_webshop_formula():
    cat = get_catalog(0, 3000)
    goal = make_goal(cat, 3)
    product = cat.by_asin[goal.asin]
    full = shop_reward(goal, product, goal.options)
    assert full["reward"] == 1.0
    none = shop_reward(goal, product, {})
    n = len(goal.attributes) + len(goal.options) + 1
    assert none["reward"] == pytest.approx((len(goal.attributes) + 1) / n)
    other = next(p for p in cat.products if p.group != product.group)
    assert shop_reward(goal, other, {})["r_type"] in (0.0, 0.1)
    pricey = ShopGoal(goal.asin, goal.type, goal.attributes, goal.options, product.price - 1)
    assert shop_reward(pricey, product, goal.options)["price"] == 0.0


def test_form_validation_messages():
    assert validate("email", "nope") is not None
    assert validate("zip", "123") is not None
    assert validate("zip", "12345") is None
    site = FormSite()
    site.reset(1, {})
    resp = site.serve(
        Request("POST", "/step/1", form={"first_name": ["A"], "last_name": ["B"], "email": ["bad"]})
    )
    assert resp.html is not None and "valid email" in resp.html and site.reached == 1


@pytest.mark.parametrize("env_id", TEXT_IDS)
def test_text_env_oracle_succeeds(env_id):
    env = gym.make(env_id)
    wins = 0
    for seed in range(6):
        env.reset(seed=seed)
        for _ in range(40):
            _obs, _reward, term, trunc, info = env.step(env.unwrapped.oracle_action())
            assert info["action_valid"], info["error"]
            if term or trunc:
                break
        wins += info.get("success", False)
    env.close()
    assert wins == 6


def test_forms_give_partial_credit():
    env = gym.make("agentgym/WebFormsText-v0")
    env.reset(seed=4)
    progress = 0.0
    for _ in range(40):
        _, _, term, trunc, info = env.step(env.unwrapped.oracle_action())
        progress += info["reward_components"]["progress"]
        if term or trunc:
            break
    assert info["success"] and info["reward_components"]["outcome"] == 1.0
    assert progress == pytest.approx(1.0)

    env.reset(seed=4)
    profile = env.unwrapped.form.profile
    els = {e["name"]: e for e in env.unwrapped.page_elements()}
    for name, text in [
        ("First name", profile["first_name"]),
        ("Last name", "Wrong"),
        ("Email", profile["email"]),
    ]:
        env.step(call("fill", bid=els[name]["bid"], text=text))
    env.step(call("click", bid=els["Next"]["bid"]))
    for _ in range(40):
        _obs, _reward, term, trunc, info = env.step(env.unwrapped.oracle_action())
        if term or trunc:
            break
    assert term and not info["success"]
    assert info["reward_components"]["outcome"] == pytest.approx(0.9)
    env.close()


def test_text_mode_rejected_for_javascript_widgets():
    with pytest.raises(InvalidConfigError):
        gym.make("agentgym/WebWidgets-v0", mode="text")


def test_bad_actions_in_text_mode_are_reported():
    env = gym.make("agentgym/WebShopText-v0")
    env.reset(seed=0)
    for action, needle in [
        (call("click", bid="999"), "no element"),
        (call("fill", bid="0", text="x" * 100_000), "too long"),
        (call("goto", path="https://example.com/"), "only paths"),
        (call("goto", path="file:///etc/passwd"), "only paths"),
        (call("goto", path="javascript:alert(1)"), "only paths"),
        (call("press", key="NotAKey!!"), "unknown key"),
        (call("select", bid="0", option="x"), "not a dropdown"),
    ]:
        obs, _reward, _term, _trunc, info = env.step(action)
        assert needle in (info["error"] or ""), (action, info["error"])
        assert needle in obs["text"]
        assert info["reward_components"]["format"] == -1.0
    obs, *_ = env.step(call("goto", path="/"))
    assert "URL: /" in obs["text"]
    env.close()


@pytest.mark.parametrize("env_id", TEXT_IDS)
def test_text_mode_snapshot_is_native_and_restores_the_future(env_id):
    env = gym.make(env_id)
    env.reset(seed=3)
    env.step(env.unwrapped.oracle_action())
    snap = env.unwrapped.snapshot()
    assert snap.native is not None, "text mode copies its state instead of replaying"
    future = [env.unwrapped.oracle_action() for _ in range(1)]
    first = []
    for _ in range(6):
        action = env.unwrapped.oracle_action()
        future.append(action)
        obs, reward, term, trunc, info = env.step(action)
        first.append((obs["text"], reward, info["state_key"]))
        if term or trunc:
            break
    other = gym.make(env_id)
    other.reset(seed=99)
    other.unwrapped.restore(snap)
    second = []
    for action in future[1 : len(first) + 1]:
        obs, reward, term, trunc, info = other.step(action)
        second.append((obs["text"], reward, info["state_key"]))
    assert first == second
    env.close()
    other.close()


def test_missing_chromium_raises_a_clear_error(monkeypatch):
    from agentgym.simulators.browser import runtime

    from agentgym.error import DependencyMissingError

    monkeypatch.setattr(runtime, "CHROMIUM_CANDIDATES", ("/nonexistent/chromium",))
    monkeypatch.delenv("AGENTGYM_CHROMIUM", raising=False)
    monkeypatch.setattr(runtime.shutil, "which", lambda name: None)
    with pytest.raises(DependencyMissingError, match="apt-get install -y chromium"):
        runtime.find_chromium()


def test_shop_offers_searching_for_the_instruction_until_it_is_typed():
    env = gym.make("agentgym/WebShopText-v0")
    obs, info = env.reset(seed=3)
    instruction = env.unwrapped.instruction()
    fills = [a for a in info["admissible_actions"] if '"fill"' in a]
    assert len(fills) == 1 and instruction in fills[0]
    obs, _, _, _, info = env.step(fills[0])
    assert info["reward_components"]["format"] == 0.0  # a valid action, not a penalty
    assert f'value="{instruction}"' in obs["text"]
    assert not any('"fill"' in a for a in info["admissible_actions"])
    search = next(a for a in info["admissible_actions"] if '"bid": "2"' in a)
    obs, *_ = env.step(search)
    assert "results for" in obs["text"]
    env.close()


def test_todo_kinds_restrict_tasks_and_click_only_kinds_are_solvable_from_admissible_clicks():
    click_kinds = ["complete", "delete", "complete+delete"]
    env = gym.make("agentgym/WebTodoText-v0", kinds=click_kinds)
    seen = set()
    for seed in range(30):
        _obs, info = env.reset(seed=seed)
        seen.add(env.unwrapped.todo.task["kind"])
        for _ in range(10):
            action = env.unwrapped.oracle_action()
            # every oracle step is one of the env's admissible clicks: a policy that only
            # chooses among them can solve these kinds
            assert action in info["admissible_actions"]
            _obs, _r, term, trunc, info = env.step(action)
            if term or trunc:
                break
        assert info["success"]
    assert seen == set(click_kinds)
    env.close()


def test_todo_default_kinds_keep_every_seeds_task():
    from agentgym.simulators.browser.sites.todo import KINDS as TODO_KINDS
    from agentgym.simulators.browser.sites.todo import make_task as make_todo

    # with every kind allowed a seed gives the task it gave before `kinds` existed
    assert [make_todo(s)["instruction"] for s in range(3)] == [
        'Rename "pay quill 1" to "pay quill 1 today".',
        'Mark "buy umber 1" as done and delete "pay ocean 2".',
        'Delete the item "email prism 3".',
    ]
    assert {make_todo(s)["kind"] for s in range(60)} == set(TODO_KINDS)
    assert {make_todo(s, ("delete",))["kind"] for s in range(20)} == {"delete"}


def test_todo_unknown_kind_is_a_clear_error():
    with pytest.raises(InvalidConfigError, match="unknown to-do task kinds"):
        gym.make("agentgym/WebTodoText-v0", kinds=["archive"])
