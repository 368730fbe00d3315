"""The text browser's parsed-page cache: pages shared by source, never their form state."""

from __future__ import annotations

from agentgym.simulators.browser import dom
from agentgym.simulators.browser.dom import PAGES, TextDocument, _PageCache

FORM = (
    "<html><head><title>T</title></head><body><form>"
    '<input name="a" placeholder="A"><input type="checkbox" name="c" checked>'
    "<select name='s'><option>x</option><option selected>y</option></select>"
    "<button>Go</button></form></body></html>"
)


def test_documents_of_one_source_share_the_tree_but_not_the_form_state() -> None:
    PAGES.clear()
    first, second = TextDocument("/", FORM), TextDocument("/other", FORM)
    assert len(PAGES) == 1 and first.root is second.root  # parsed once
    box, check, select = (first.by_bid[b] for b in ("0", "1", "2"))
    first.values[id(box)] = "typed"
    first.checked[id(check)] = False
    first.selected[id(select)] = 0
    changed, fresh = first.observe(), second.observe()
    assert changed.lines == [
        '[0] textbox "A" value="typed"',
        '[1] checkbox "c" unchecked',
        '[2] combobox "s" value="x" options=["x","y"]',
        '[3] button "Go"',
    ]
    assert fresh.url == "/other" and fresh.lines == [
        '[0] textbox "A"',
        '[1] checkbox "c" checked',
        '[2] combobox "s" value="y" options=["x","y"]',
        '[3] button "Go"',
    ]
    # a third document starts from the markup's state, not from what the others did
    assert TextDocument("/", FORM).observe().lines == fresh.lines


def test_an_observation_is_the_callers_own() -> None:
    doc = TextDocument("/", FORM)
    seen = doc.observe()
    seen.lines.append("junk")
    seen.elements[2]["options"].append("z")
    seen.elements[0]["name"] = "changed"
    again = doc.observe()
    assert "junk" not in again.lines
    assert again.elements[2]["options"] == ["x", "y"] and again.elements[0]["name"] == "A"
    assert TextDocument("/", FORM).observe().elements == again.elements


def test_the_cache_keeps_the_most_recently_used_pages(monkeypatch) -> None:
    cache = _PageCache(2)
    monkeypatch.setattr(dom, "PAGES", cache)
    sources = [FORM.replace("<title>T", f"<title>{i}") for i in range(3)]
    docs = [TextDocument("/", s) for s in sources[:2]]
    assert TextDocument("/", sources[0]).root is docs[0].root  # hit: page 0 is now newest
    TextDocument("/", sources[2])  # evicts page 1, the least recently used
    assert len(cache) == 2
    assert cache.get(sources[0]) is not None and cache.get(sources[1]) is None
    assert TextDocument("/", sources[1]).root is not docs[1].root  # parsed again
    assert TextDocument("/", sources[1]).observe().lines == docs[1].observe().lines
