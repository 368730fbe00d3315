"""A browser-free mirror of the in-page observation, and a text-mode browser.

:func:`observe_html` turns server-rendered HTML into exactly the observation that
``static/observe.js`` produces in Chromium for the same document (same element ids, roles,
names, values and text lines), for pages that hide things only with the ``hidden``
attribute, ``aria-hidden`` or an inline ``display:none``. :class:`TextBrowser` drives a
:class:`~agentgym.simulators.browser.site.Site` directly with the same actions the browser
takes (click, fill, select, check, press Enter, goto, back), so a text-mode env gives the
same observations and rewards as the browser env, at a fraction of the cost.

Parsing is most of a text-mode step's cost, and pages repeat: a to-do item toggled back, a
page revisited, the members of a GRPO group on the same task. So a parsed page (its tree,
element ids and first observation) is kept per distinct source in a bounded, process-wide
cache (:data:`PAGE_CACHE_SIZE` pages) and shared read-only by every :class:`TextDocument` of
that source; what changes per document (form state, focus) lives in the document. A
document also keeps its last observation until its form state changes.
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any
from urllib.parse import unquote_plus, urlencode, urljoin, urlsplit

from agentgym.simulators.browser.markup import feed_fast
from agentgym.simulators.browser.site import Request, Site

VOID = frozenset(
    [
        "area",
        "base",
        "br",
        "col",
        "embed",
        "hr",
        "img",
        "input",
        "link",
        "meta",
        "param",
        "source",
        "track",
        "wbr",
    ]
)
SKIP = frozenset({"script", "style", "noscript", "template", "head", "option"})
TEXT_INPUTS = frozenset({"", "text", "search", "email", "number", "password", "tel", "url"})
ARIA_ROLES = frozenset(
    [
        "button",
        "link",
        "tab",
        "option",
        "checkbox",
        "radio",
        "menuitem",
        "switch",
        "textbox",
        "combobox",
        "treeitem",
    ]
)
_WS = re.compile(r"\s+")


def display_url(url: str) -> str:
    """The address as observations show it: path plus the decoded query (both modes)."""
    parts = urlsplit(url)
    return parts.path + ("?" + unquote_plus(parts.query) if parts.query else "")


def norm(text: str) -> str:
    return _WS.sub(" ", text or "").strip()


def cut(text: str, n: int) -> str:
    return text[:n] + "…" if len(text) > n else text


_COMPACT_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def q(value: Any) -> str:
    """``value`` as compact JSON, non-ASCII kept (``json.dumps`` with one shared encoder)."""
    return _COMPACT_JSON.encode(value)


@dataclass(slots=True)  # cached pages hold many nodes
class Node:
    """One element (``tag`` set) or text node (``text`` set)."""

    tag: str = ""
    attrs: dict[str, str] = field(default_factory=dict)
    children: list[Node] = field(default_factory=list)
    text: str | None = None
    parent: Node | None = None

    def text_content(self) -> str:
        if self.text is not None:
            return self.text
        return "".join(c.text_content() for c in self.children)

    def iter(self):  # type: ignore[no-untyped-def]
        """This node and every node under it, in document order (one generator, no
        recursion: a generator per level made a walk cost depth x nodes)."""
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    def ancestor(self, tag: str) -> Node | None:
        node = self.parent
        while node is not None and node.tag != tag:
            node = node.parent
        return node


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node(tag="#document")
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag=tag, attrs={k: (v if v is not None else "") for k, v in attrs})
        node.parent = self.stack[-1]
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.stack.pop()

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        parent = self.stack[-1]
        if parent.children and parent.children[-1].text is not None:
            parent.children[-1].text += data
        else:
            parent.children.append(Node(text=data, parent=parent))


def parse_html(source: str) -> Node:
    """Parse a document into a small tree (enough for server-rendered pages): with the
    fast reader for the sites' regular markup, else with ``html.parser`` (same tree)."""
    builder = _Builder()
    if feed_fast(source, builder):
        return builder.root
    builder = _Builder()
    builder.feed(source)
    builder.close()
    return builder.root


def find(root: Node, tag: str) -> Node | None:
    return next((n for n in root.iter() if n.tag == tag), None)


def _hidden(node: Node) -> bool:
    if "hidden" in node.attrs or node.attrs.get("aria-hidden") == "true":
        return True
    style = node.attrs.get("style", "").replace(" ", "").lower()
    return "display:none" in style or "visibility:hidden" in style


def role_of(node: Node) -> str | None:
    aria = node.attrs.get("role")
    if aria in ARIA_ROLES:
        return aria
    tag = node.tag
    if tag == "a" and "href" in node.attrs:
        return "link"
    if tag == "button":
        return "button"
    if tag == "select":
        return "combobox"
    if tag == "textarea":
        return "textbox"
    if tag == "input":
        kind = node.attrs.get("type", "").lower()
        if kind in ("submit", "button", "reset"):
            return "button"
        if kind in ("checkbox", "radio"):
            return kind
        if kind in TEXT_INPUTS:
            return "textbox"
    return None


@dataclass
class PageObservation:
    """What one observation of a page holds (both modes)."""

    url: str
    title: str
    lines: list[str]
    elements: list[dict[str, Any]]

    @classmethod
    def from_js(cls, data: dict[str, Any]) -> PageObservation:
        return cls(data["url"], data["title"], list(data["lines"]), list(data["elements"]))


PAGE_CACHE_SIZE = 2048
"""Distinct parsed pages kept per process (least recently used dropped first)."""


@dataclass(frozen=True)
class _ParsedPage:
    """One source's parse, shared read-only by every document of that source: the tree with
    its element ids assigned (in document order, by the first observation; which elements
    get one depends on the tree alone, so no later observation assigns more), the form state
    the markup sets, and the observation of that state (lines, elements)."""

    root: Node
    title: str
    body: Node
    by_bid: dict[str, Node]
    next_bid: int
    values: dict[int, str]
    checked: dict[int, bool]
    selected: dict[int, int]
    lines: list[str]
    elements: list[dict[str, Any]]


class _PageCache:
    """A bounded LRU of :class:`_ParsedPage` by source, safe to use from several threads."""

    def __init__(self, size: int):
        self.size = size
        self._pages: OrderedDict[str, _ParsedPage] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, source: str) -> _ParsedPage | None:
        with self._lock:
            page = self._pages.get(source)
            if page is not None:
                self._pages.move_to_end(source)
            return page

    def put(self, source: str, page: _ParsedPage) -> None:
        with self._lock:
            self._pages[source] = page
            while len(self._pages) > self.size:
                self._pages.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._pages.clear()

    def __len__(self) -> int:
        return len(self._pages)


PAGES = _PageCache(PAGE_CACHE_SIZE)
"""The process's parsed pages (see the module docstring)."""

_FormKey = tuple[
    tuple[tuple[int, str], ...], tuple[tuple[int, bool], ...], tuple[tuple[int, int], ...]
]


def _copied(element: dict[str, Any]) -> dict[str, Any]:
    """A caller's own copy of an observed element (its option list included)."""
    out = dict(element)
    if "options" in out:
        out["options"] = list(out["options"])
    return out


class TextDocument:
    """A parsed page plus the form state the text browser keeps for it. Its elements have
    their ids from the start (given out in document order, as the browser does on load)."""

    def __init__(self, url: str, source: str):
        self.url = url
        self.raw_url = url
        self.source = source
        page = PAGES.get(source)
        if page is None:
            page = self._parse(source)
            PAGES.put(source, page)
        self.root, self.title, self.body = page.root, page.title, page.body
        self.by_bid = page.by_bid  # complete for this tree: observe() assigns no more ids
        self.next_bid = page.next_bid
        # live form state, initialised from the markup
        self.values = dict(page.values)
        self.checked = dict(page.checked)
        self.selected = dict(page.selected)
        self._seen: tuple[_FormKey, list[str], list[dict[str, Any]]] = (
            self._form_key(),
            page.lines,
            page.elements,
        )

    def _parse(self, source: str) -> _ParsedPage:
        """Parse ``source``, read the form state its markup sets, and observe it once (which
        assigns the element ids); the tree is read-only from then on."""
        self.root = parse_html(source)
        title = body = None
        self.next_bid = 0
        self.by_bid = {}
        self.values, self.checked, self.selected = {}, {}, {}
        for node in self.root.iter():  # one pass: the first title and body, the form state
            if node.tag == "title" and title is None:
                title = node
            elif node.tag == "body" and body is None:
                body = node
            elif node.tag == "input":
                kind = node.attrs.get("type", "").lower()
                if kind in ("checkbox", "radio"):
                    self.checked[id(node)] = "checked" in node.attrs
                else:
                    self.values[id(node)] = node.attrs.get("value", "")
            elif node.tag == "textarea":
                self.values[id(node)] = node.text_content()
            elif node.tag == "select":
                opts = self.options(node)
                pick = next((i for i, o in enumerate(opts) if "selected" in o.attrs), 0)
                self.selected[id(node)] = pick if opts else -1
        self.title = norm(title.text_content()) if title else ""
        self.body = body or self.root
        lines, elements = self._walk()
        return _ParsedPage(
            self.root,
            self.title,
            self.body,
            self.by_bid,
            self.next_bid,
            dict(self.values),
            dict(self.checked),
            dict(self.selected),
            lines,
            elements,
        )

    def _form_key(self) -> _FormKey:
        """Everything an observation reads that can change after parsing: the form state."""
        return (
            tuple(self.values.items()),
            tuple(self.checked.items()),
            tuple(self.selected.items()),
        )

    @staticmethod
    def options(select: Node) -> list[Node]:
        return [n for n in select.iter() if n.tag == "option"]

    def value(self, node: Node) -> str:
        return self.values.get(id(node), "")

    def name(self, node: Node) -> str:
        label = node.attrs.get("aria-label")
        if label:
            return norm(label)
        if node.tag == "input":
            kind = node.attrs.get("type", "").lower()
            if kind in ("submit", "button", "reset"):
                return norm(node.attrs.get("value") or "Submit")
            return norm(node.attrs.get("placeholder") or node.attrs.get("name") or "")
        if node.tag in ("select", "textarea"):
            return norm(node.attrs.get("placeholder") or node.attrs.get("name") or "")
        return norm(node.text_content())

    def observe(self) -> PageObservation:
        """What the page shows now; the caller owns the lists and dicts it gets."""
        key = self._form_key()
        seen_key, lines, elements = self._seen
        if seen_key != key:
            lines, elements = self._walk()
            self._seen = (key, lines, elements)
        return PageObservation(self.url, self.title, list(lines), [_copied(e) for e in elements])

    def _walk(self) -> tuple[list[str], list[dict[str, Any]]]:
        """The page's text lines and interactive elements under the current form state;
        assigns ids, in document order, to elements that have none yet."""
        lines: list[str] = []
        elements: list[dict[str, Any]] = []

        def describe(node: Node, role: str, bid: str) -> None:
            info: dict[str, Any] = {"bid": bid, "role": role, "name": cut(self.name(node), 100)}
            line = f"[{bid}] {role} {q(info['name'])}"
            if node.tag == "select":
                opts = [norm(o.text_content()) for o in self.options(node)]
                idx = self.selected.get(id(node), -1)
                sel = opts[idx] if idx >= 0 else ""
                info["value"], info["options"] = sel, opts
                line += f" value={q(sel)} options={q(opts)}"
            elif role == "textbox" and node.tag in ("input", "textarea"):
                value = self.value(node)
                info["value"] = value
                if value:
                    line += f" value={q(cut(value, 200))}"
            elif role in ("checkbox", "radio", "switch"):
                if node.tag == "input":
                    checked = self.checked.get(id(node), False)
                else:
                    checked = node.attrs.get("aria-checked") == "true"
                info["checked"] = checked
                line += " checked" if checked else " unchecked"
            elif role in ("tab", "option"):
                sel_ = node.attrs.get("aria-selected") == "true"
                info["selected"] = sel_
                if sel_:
                    line += " selected"
            if "disabled" in node.attrs or node.attrs.get("aria-disabled") == "true":
                info["disabled"] = True
                line += " disabled"
            elements.append(info)
            lines.append(line)

        def walk(node: Node, inside: bool) -> None:
            for ch in node.children:
                if ch.text is not None:
                    if not inside:
                        t = norm(ch.text)
                        if t:
                            lines.append(cut(t, 500))
                    continue
                if ch.tag in SKIP or _hidden(ch):
                    continue
                role = role_of(ch)
                if role:
                    bid = ch.attrs.get("data-bid")
                    if bid is None:
                        bid = str(self.next_bid)
                        self.next_bid += 1
                        ch.attrs["data-bid"] = bid
                        self.by_bid[bid] = ch
                    describe(ch, role, bid)
                    walk(ch, True)
                else:
                    walk(ch, inside)

        walk(self.body, False)
        return lines, elements


class TextBrowser:
    """Drive a :class:`Site` with browser actions, no Chromium involved.

    Each method returns ``None`` on success or an error message, worded like the browser
    session's, so envs can treat both modes alike.
    """

    def __init__(self, site: Site, *, max_redirects: int = 5):
        self.site = site
        self.max_redirects = max_redirects
        self.doc: TextDocument | None = None
        self.history: list[str] = []
        self.focus: Node | None = None
        self.infra_error = False
        #: What the last action did besides its plain effect (as the browser session reports).
        self.notice: str | None = None

    @property
    def url(self) -> str:
        return self.doc.url if self.doc else "/"

    def open(self, path: str, *, push: bool = True) -> str | None:
        return self._request(Request.from_url("GET", path), push=push, raw_url=path)

    def _request(self, request: Request, *, push: bool = True, raw_url: str = "") -> str | None:
        response = self.site.serve(request)
        hops = 0
        while response.redirect is not None and hops < self.max_redirects:
            hops += 1
            request = Request.from_url("GET", response.redirect)
            raw_url = response.redirect
            response = self.site.serve(request)
        if response.html is None:
            return f"the page at {request.path} did not return HTML"
        url = request.path + (("?" + urlencode(request.query, doseq=True)) if request.query else "")
        url = raw_url or url
        if push and self.doc is not None:
            self.history.append(self.doc.raw_url)
        self.doc = TextDocument(display_url(url), response.html)
        self.doc.raw_url = url
        self.focus = None
        return None

    def observe(self) -> PageObservation:
        assert self.doc is not None
        return self.doc.observe()

    def _node(self, bid: str) -> tuple[Node | None, str | None]:
        assert self.doc is not None
        node = self.doc.by_bid.get(str(bid))
        if node is None:
            return None, f"there is no element [{bid}] on this page"
        return node, None

    # -- snapshots -----------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """The browser's own state (page source, form state by element id, history)."""
        doc = self.doc
        if doc is None:
            return {"doc": None, "history": list(self.history)}
        form: dict[str, Any] = {}
        for bid, node in doc.by_bid.items():
            key = id(node)
            if key in doc.values:
                form[bid] = ("value", doc.values[key])
            elif key in doc.checked:
                form[bid] = ("checked", doc.checked[key])
            elif key in doc.selected:
                form[bid] = ("selected", doc.selected[key])
        focus = self.focus.attrs.get("data-bid") if self.focus is not None else None
        return {
            "doc": (doc.url, doc.raw_url, doc.source, form, focus),
            "history": list(self.history),
        }

    def restore(self, state: dict[str, Any]) -> None:
        """Return to a :meth:`snapshot` (the site's state is restored separately)."""
        self.history = list(state["history"])
        self.focus = None
        if state["doc"] is None:
            self.doc = None
            return
        url, raw_url, source, form, focus = state["doc"]
        doc = TextDocument(url, source)
        doc.raw_url = raw_url
        for bid, (kind, value) in form.items():
            node = doc.by_bid.get(bid)
            if node is None:
                continue
            getattr(doc, {"value": "values", "checked": "checked", "selected": "selected"}[kind])[
                id(node)
            ] = value
        self.doc = doc
        if focus is not None:
            self.focus = doc.by_bid.get(focus)

    # -- actions -------------------------------------------------------------------------

    def click(self, bid: str) -> str | None:
        node, err = self._node(bid)
        if node is None:
            return err
        assert self.doc is not None
        role = role_of(node)
        if "disabled" in node.attrs or node.attrs.get("aria-disabled") == "true":
            return f"element [{bid}] is disabled"
        if role == "link":
            href = node.attrs.get("href", "")
            target = urlsplit(urljoin("http://site" + self.doc.raw_url, href))
            if target.scheme != "http" or target.netloc != "site":
                return f"link [{bid}] leads outside the site ({target.scheme}:); blocked"
            return self.open(target.path + (f"?{target.query}" if target.query else ""))
        if node.tag == "input" and node.attrs.get("type", "").lower() in ("checkbox", "radio"):
            return self._set_checked(
                node,
                not self.doc.checked.get(id(node), False)
                or node.attrs.get("type", "").lower() == "radio",
            )
        if role in ("textbox", "combobox"):
            self.focus = node
            return None
        is_submit = (node.tag == "button" and node.attrs.get("type", "submit") == "submit") or (
            node.tag == "input" and node.attrs.get("type", "").lower() == "submit"
        )
        form = node.ancestor("form")
        if is_submit and form is not None:
            return self._submit(form, node)
        return None

    def _set_checked(self, node: Node, value: bool) -> str | None:
        assert self.doc is not None
        if node.attrs.get("type", "").lower() == "radio" and value:
            group = node.attrs.get("name")
            form = node.ancestor("form") or self.doc.root
            for other in form.iter():
                if (
                    other.tag == "input"
                    and other.attrs.get("type", "").lower() == "radio"
                    and (other.attrs.get("name") == group)
                ):
                    self.doc.checked[id(other)] = False
        self.doc.checked[id(node)] = value
        return None

    def set_checked(self, bid: str, value: bool) -> str | None:
        node, err = self._node(bid)
        if node is None:
            return err
        if role_of(node) not in ("checkbox", "radio"):
            return f"element [{bid}] is not a checkbox or radio button"
        assert self.doc is not None
        if self.doc.checked.get(id(node), False) == value:
            return None
        if not value and node.attrs.get("type", "").lower() == "radio":
            return f"radio button [{bid}] cannot be unchecked directly; check another option"
        return self._set_checked(node, value)

    def fill(self, bid: str, text: str) -> str | None:
        node, err = self._node(bid)
        if node is None:
            return err
        if role_of(node) != "textbox" or node.tag not in ("input", "textarea"):
            return f"element [{bid}] is not a text field"
        if "disabled" in node.attrs or "readonly" in node.attrs:
            return None
        assert self.doc is not None
        maxlength = node.attrs.get("maxlength")
        if maxlength and maxlength.isdigit():
            text = text[: int(maxlength)]
        if node.tag == "input":
            text = text.replace("\r", "").replace("\n", "")
        self.doc.values[id(node)] = text
        self.focus = node
        return None

    def select(self, bid: str, option: str) -> str | None:
        node, err = self._node(bid)
        if node is None:
            return err
        if node.tag != "select":
            return f"element [{bid}] is not a dropdown"
        assert self.doc is not None
        opts = TextDocument.options(node)
        for i, opt in enumerate(opts):
            if norm(opt.text_content()) == norm(option):
                self.doc.selected[id(node)] = i
                return None
        for i, opt in enumerate(opts):
            if opt.attrs.get("value") == option:
                self.doc.selected[id(node)] = i
                return None
        names = [norm(o.text_content()) for o in opts]
        return f"dropdown [{bid}] has no option {option!r}; options: {names}"

    def press(self, key: str) -> str | None:
        """Enter in a form's input submits it. With Shift/Control/Meta a browser would submit
        into a new window; like the browser session's page helper, it is submitted here."""
        held = set()
        while key.startswith(("Shift+", "Control+", "Meta+")):
            mod, key = key.split("+", 1)
            held.add(mod)
        if key == "Enter" and self.focus is not None and self.focus.tag == "input":
            form = self.focus.ancestor("form")
            if form is not None:
                if held:
                    combo = "+".join(m for m in ("Control", "Meta", "Shift") if m in held)
                    self.notice = (
                        f"{combo}+Enter would submit the form into a new window; "
                        "it was submitted in this tab"
                    )
                return self._submit(form, None)
        return None

    def goto(self, path: str) -> str | None:
        return self.open(path)

    def scroll(self, direction: str) -> str | None:
        """Scrolling changes nothing a text observation shows."""
        return None

    def back(self) -> str | None:
        if not self.history:
            return "there is no previous page"
        url = self.history.pop()
        return self.open(url, push=False)

    def _submit(self, form: Node, submitter: Node | None) -> str | None:
        assert self.doc is not None
        fields: list[tuple[str, str]] = []
        for node in form.iter():
            name = node.attrs.get("name")
            if (
                not name
                or "disabled" in node.attrs
                or node.tag not in ("input", "select", "textarea")
            ):
                continue
            if node.tag == "input":
                kind = node.attrs.get("type", "").lower()
                if kind in ("submit", "button", "reset", "image"):
                    continue
                if kind in ("checkbox", "radio"):
                    if self.doc.checked.get(id(node)):
                        fields.append((name, node.attrs.get("value", "on")))
                    continue
                fields.append((name, self.doc.value(node)))
            elif node.tag == "textarea":
                fields.append((name, self.doc.value(node)))
            else:
                opts = TextDocument.options(node)
                idx = self.doc.selected.get(id(node), -1)
                if idx >= 0:
                    opt = opts[idx]
                    fields.append((name, opt.attrs.get("value", norm(opt.text_content()))))
        if submitter is not None and submitter.attrs.get("name"):
            fields.append((submitter.attrs["name"], submitter.attrs.get("value", "")))
        action = form.attrs.get("action") or self.doc.raw_url
        target = urlsplit(urljoin("http://site" + self.doc.raw_url, action))
        method = form.attrs.get("method", "get").upper()
        if method == "POST":
            data: dict[str, list[str]] = {}
            for k, v in fields:
                data.setdefault(k, []).append(v)
            req = Request.from_url(
                "POST", target.path + (f"?{target.query}" if target.query else ""), form=data
            )
            return self._request(req)
        return self.open(target.path + "?" + urlencode(fields))
