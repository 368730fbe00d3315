"""MiniWoB-like widget pages: one small page per task, checked against what it submits.

Each task kind is a generator ``(rng) -> WidgetTask`` producing the page body, its script,
the instruction and the payload a correct submission carries. The page sends its answer to
``POST /submit`` (through the page helper, so observations wait for it); the site records it
and the env compares it with the expected payload in Python. Task content comes only from
the task seed.

Oracles: every kind has an ``oracle(task, elements, lines)`` that picks the next action from
the current observation plus the task's privileged data (the expected payload).
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

import numpy as np
from agentgym.simulators.browser.site import Request, Response, Site, esc, not_found, page
from agentgym.simulators.browser.sites.words import (
    COLOR_HEX,
    COLORS,
    COUNTRIES,
    FIRST_NAMES,
    SHAPES,
    WORDS,
)

Action = tuple[str, dict[str, Any]]
Elements = list[dict[str, Any]]


@dataclass
class WidgetTask:
    kind: str
    instruction: str
    body: str
    script: str
    expected: dict[str, Any]
    data: dict[str, Any] = field(default_factory=dict)


SEND_JS = """
function agSend(data) {
  const st = document.getElementById('ag-status');
  if (st) st.textContent = 'Submitted.';
  document.querySelectorAll('button, input, select, [role]').forEach(e => {
    if ('disabled' in e) e.disabled = true; else e.setAttribute('aria-disabled', 'true');
  });
  return __ag.post('/submit', data);
}
"""


def _pick(rng: np.random.Generator, items: Any, k: int | None = None) -> Any:
    items = list(items)
    if k is None:
        return items[int(rng.integers(len(items)))]
    idx = rng.choice(len(items), size=k, replace=False)
    return [items[int(i)] for i in idx]


def _submit_button(call: str = "agSend(collect())") -> str:
    return f"<button id='ag-submit' onclick=\"{call}\">Submit</button>"


# -- generators --------------------------------------------------------------------------


def click_button(rng: np.random.Generator) -> WidgetTask:
    labels = _pick(rng, WORDS, int(rng.integers(3, 7)))
    target = _pick(rng, labels)
    body = "".join(
        f'<button onclick="agSend({{clicked: {esc(json.dumps(w))}}})">{esc(w)}</button>'
        for w in labels
    )
    return WidgetTask(
        "click-button", f'Click the button "{target}".', body, "", {"clicked": target}
    )


def click_link(rng: np.random.Generator) -> WidgetTask:
    words = _pick(rng, WORDS, 12)
    target = _pick(rng, words[:6])
    parts = []
    for i, w in enumerate(words):
        if i < 6:
            parts.append(
                f"<a href='#' onclick=\"event.preventDefault(); agSend({{clicked: {esc(json.dumps(w))}}})\">{esc(w)}</a>"
            )
        else:
            parts.append(esc(w))
    order = rng.permutation(len(parts))
    body = "<p>" + " ".join(parts[int(i)] for i in order) + "</p>"
    return WidgetTask("click-link", f'Click the link "{target}".', body, "", {"clicked": target})


def enter_text(rng: np.random.Generator) -> WidgetTask:
    target = _pick(rng, WORDS) + str(int(rng.integers(10, 99)))
    body = "<input id='t' aria-label='Text'>" + _submit_button()
    script = "function collect(){ return {text: document.getElementById('t').value}; }"
    return WidgetTask(
        "enter-text",
        f'Type "{target}" into the text field and press Submit.',
        body,
        script,
        {"text": target},
    )


def enter_password(rng: np.random.Generator) -> WidgetTask:
    target = _pick(rng, WORDS) + str(int(rng.integers(100, 999)))
    body = (
        "<p>Password <input id='p1' type='password' aria-label='Password'></p>"
        "<p>Verify <input id='p2' type='password' aria-label='Verify password'></p>"
        + _submit_button()
    )
    script = "function collect(){ return {p1: document.getElementById('p1').value, p2: document.getElementById('p2').value}; }"
    return WidgetTask(
        "enter-password",
        f'Enter the password "{target}" into both fields and press Submit.',
        body,
        script,
        {"p1": target, "p2": target},
    )


def login_user(rng: np.random.Generator) -> WidgetTask:
    user = _pick(rng, FIRST_NAMES).lower()
    pw = _pick(rng, WORDS) + str(int(rng.integers(10, 99)))
    body = (
        "<p>Username <input id='u' aria-label='Username'></p>"
        "<p>Password <input id='p' type='password' aria-label='Password'></p>"
        '<button onclick="agSend(collect())">Login</button>'
    )
    script = "function collect(){ return {user: document.getElementById('u').value, password: document.getElementById('p').value}; }"
    return WidgetTask(
        "login-user",
        f'Log in as "{user}" with password "{pw}".',
        body,
        script,
        {"user": user, "password": pw},
    )


def click_checkboxes(rng: np.random.Generator) -> WidgetTask:
    labels = _pick(rng, WORDS, int(rng.integers(4, 7)))
    targets = sorted(_pick(rng, labels, int(rng.integers(1, 4))))
    body = (
        "".join(
            f"<p><label><input type='checkbox' value='{esc(w)}' aria-label='{esc(w)}'> {esc(w)}</label></p>"
            for w in labels
        )
        + _submit_button()
    )
    script = "function collect(){ return {checked: [...document.querySelectorAll('input[type=checkbox]')].filter(e => e.checked).map(e => e.value).sort()}; }"
    return WidgetTask(
        "click-checkboxes",
        "Select "
        + ", ".join(f'"{t}"' for t in targets)
        + " (and nothing else), then press Submit.",
        body,
        script,
        {"checked": targets},
    )


def choose_radio(rng: np.random.Generator) -> WidgetTask:
    labels = _pick(rng, WORDS, int(rng.integers(3, 6)))
    target = _pick(rng, labels)
    body = (
        "".join(
            f"<p><label><input type='radio' name='r' value='{esc(w)}' aria-label='{esc(w)}'> {esc(w)}</label></p>"
            for w in labels
        )
        + _submit_button()
    )
    script = "function collect(){ const e = document.querySelector('input[name=r]:checked'); return {choice: e ? e.value : null}; }"
    return WidgetTask(
        "choose-radio", f'Choose "{target}" and press Submit.', body, script, {"choice": target}
    )


def select_dropdown(rng: np.random.Generator) -> WidgetTask:
    opts = _pick(rng, COUNTRIES, int(rng.integers(5, 12)))
    target = _pick(rng, opts[1:])
    body = (
        "<select id='s' aria-label='Country'>"
        + "".join(f"<option>{esc(o)}</option>" for o in opts)
        + "</select>"
        + _submit_button()
    )
    script = "function collect(){ const s = document.getElementById('s'); return {choice: s.options[s.selectedIndex].text}; }"
    return WidgetTask(
        "select-dropdown",
        f'Select "{target}" from the list and press Submit.',
        body,
        script,
        {"choice": target},
    )


def click_tab(rng: np.random.Generator) -> WidgetTask:
    n = int(rng.integers(3, 5))
    words = _pick(rng, WORDS, n * 3)
    panel = int(rng.integers(1, n))
    target = words[panel * 3 + int(rng.integers(3))]
    tabs = "".join(
        f"<span role='tab' aria-selected='{'true' if i == 0 else 'false'}' onclick='showTab({i})'>Tab #{i + 1}</span>"
        for i in range(n)
    )
    panels = "".join(
        f"<div class='card' id='panel{i}' {'' if i == 0 else 'hidden'}>"
        + " ".join(
            f"<a href='#' onclick=\"event.preventDefault(); agSend({{clicked: {esc(json.dumps(w))}}})\">{esc(w)}</a>"
            for w in words[i * 3 : i * 3 + 3]
        )
        + "</div>"
        for i in range(n)
    )
    script = (
        "function showTab(k){ document.querySelectorAll('[role=tab]').forEach((t,i)=>t.setAttribute('aria-selected', i===k?'true':'false'));"
        " document.querySelectorAll('[id^=panel]').forEach((p,i)=>{p.hidden = i!==k;}); }"
    )
    return WidgetTask(
        "click-tab",
        f'Find the link "{target}" on one of the tabs and click it.',
        f"<div class='tabs'>{tabs}</div>{panels}",
        script,
        {"clicked": target},
        {"tab": panel},
    )


def date_picker(rng: np.random.Generator) -> WidgetTask:
    start = date(2024, int(rng.integers(1, 13)), 1)
    offset = int(rng.integers(-60, 90))
    target = start + timedelta(days=offset)
    body = (
        "<div class='cal'><button onclick='move(-1)'>Previous month</button>"
        "<b id='month'></b><button onclick='move(1)'>Next month</button><div id='days'></div></div>"
        "<p id='sel'>Selected date: none</p>" + _submit_button()
    )
    script = f"""
let y = {start.year}, m = {start.month - 1}, chosen = null;
const NAMES = ['January','February','March','April','May','June','July','August','September','October','November','December'];
function iso(d) {{ return d.getUTCFullYear() + '-' + String(d.getUTCMonth()+1).padStart(2,'0') + '-' + String(d.getUTCDate()).padStart(2,'0'); }}
function draw() {{
  document.getElementById('month').textContent = NAMES[m] + ' ' + y;
  const box = document.getElementById('days'); box.textContent = '';
  const n = new Date(Date.UTC(y, m + 1, 0)).getUTCDate();
  for (let d = 1; d <= n; d++) {{
    const b = document.createElement('button'); const v = iso(new Date(Date.UTC(y, m, d)));
    b.textContent = d; b.setAttribute('aria-label', v);
    b.onclick = () => {{ chosen = v; document.getElementById('sel').textContent = 'Selected date: ' + v; }};
    box.appendChild(b);
  }}
}}
function move(k) {{ m += k; if (m < 0) {{ m = 11; y--; }} if (m > 11) {{ m = 0; y++; }} draw(); }}
function collect() {{ return {{date: chosen}}; }}
draw();
"""
    return WidgetTask(
        "date-picker",
        f"Pick the date {target.isoformat()} in the calendar and press Submit.",
        body,
        script,
        {"date": target.isoformat()},
    )


def autocomplete(rng: np.random.Generator) -> WidgetTask:
    target = _pick(rng, COUNTRIES)
    body = (
        "<input id='a' aria-label='Country' oninput='suggest()' autocomplete='off'>"
        "<div id='sugg' role='listbox'></div>" + _submit_button()
    )
    script = f"""
const ALL = {json.dumps(list(COUNTRIES))};
function suggest() {{
  const v = document.getElementById('a').value.toLowerCase(); const box = document.getElementById('sugg');
  box.textContent = '';
  if (!v) return;
  ALL.filter(c => c.toLowerCase().startsWith(v)).slice(0, 5).forEach(c => {{
    const o = document.createElement('div'); o.setAttribute('role', 'option'); o.textContent = c;
    o.onclick = () => {{ document.getElementById('a').value = c; box.textContent = ''; }};
    box.appendChild(o);
  }});
}}
function collect() {{ return {{country: document.getElementById('a').value}}; }}
"""
    return WidgetTask(
        "autocomplete",
        f'Type the first letters of "{target}", pick it from the suggestions, and press Submit.',
        body,
        script,
        {"country": target},
    )


def scroll_to_find(rng: np.random.Generator) -> WidgetTask:
    n = 40
    items = [f"{w} {i}" for i, w in enumerate(_pick(rng, WORDS, n))]
    target = items[int(rng.integers(n // 2, n))]
    body = (
        "<div class='scrollbox'>"
        + "".join(
            f'<p><button onclick="agSend({{clicked: {esc(json.dumps(it))}}})">{esc(it)}</button></p>'
            for it in items
        )
        + "</div>"
    )
    return WidgetTask(
        "scroll-to-find",
        f'Scroll the list to find "{target}" and click it.',
        body,
        "",
        {"clicked": target},
    )


def sort_list(rng: np.random.Generator) -> WidgetTask:
    items = _pick(rng, WORDS, int(rng.integers(3, 6)))
    while items == sorted(items):
        items = [items[int(i)] for i in rng.permutation(len(items))]
    body = "<ol id='list'></ol>" + _submit_button()
    script = f"""
let items = {json.dumps(items)};
function draw() {{
  const ol = document.getElementById('list'); ol.textContent = '';
  items.forEach((it, i) => {{
    const li = document.createElement('li'); li.append(it + ' ');
    const up = document.createElement('button'); up.textContent = 'up'; up.setAttribute('aria-label', 'Move ' + it + ' up');
    up.onclick = () => {{ if (i > 0) {{ [items[i-1], items[i]] = [items[i], items[i-1]]; draw(); }} }};
    const dn = document.createElement('button'); dn.textContent = 'down'; dn.setAttribute('aria-label', 'Move ' + it + ' down');
    dn.onclick = () => {{ if (i < items.length - 1) {{ [items[i+1], items[i]] = [items[i], items[i+1]]; draw(); }} }};
    li.append(up, dn); ol.appendChild(li);
  }});
}}
function collect() {{ return {{order: items}}; }}
draw();
"""
    return WidgetTask(
        "sort-list",
        "Sort the list alphabetically (A to Z) with the up/down buttons, then press Submit.",
        body,
        script,
        {"order": sorted(items)},
    )


def click_color(rng: np.random.Generator) -> WidgetTask:
    colors = _pick(rng, COLORS, int(rng.integers(3, 7)))
    target = _pick(rng, colors)
    body = "".join(
        f"<span class='swatch' role='button' aria-label='{c}' style='background:{COLOR_HEX[c]}' onclick=\"agSend({{color: '{c}'}})\"></span>"
        for c in colors
    )
    return WidgetTask("click-color", f"Click the {target} square.", body, "", {"color": target})


def count_shapes(rng: np.random.Generator) -> WidgetTask:
    shapes = [str(_pick(rng, SHAPES)) for _ in range(int(rng.integers(5, 12)))]
    target = _pick(rng, shapes)
    count = shapes.count(target)
    body = "<p>" + ", ".join(shapes) + "</p><input id='n' aria-label='Count'>" + _submit_button()
    script = "function collect(){ return {count: document.getElementById('n').value.trim()}; }"
    return WidgetTask(
        "count-shapes",
        f"How many times does the word {target} appear in the list? Enter the number and press Submit.",
        body,
        script,
        {"count": str(count)},
    )


def toggle_switches(rng: np.random.Generator) -> WidgetTask:
    labels = _pick(rng, WORDS, int(rng.integers(3, 6)))
    start = [bool(rng.integers(2)) for _ in labels]
    want = [bool(rng.integers(2)) for _ in labels]
    if want == start:
        want[0] = not want[0]
    body = (
        "".join(
            f"<p>{esc(w)} <span role='switch' aria-label='{esc(w)}' aria-checked='{'true' if s else 'false'}' "
            "onclick=\"this.setAttribute('aria-checked', this.getAttribute('aria-checked')==='true'?'false':'true')\">"
            f"{'on' if s else 'off'}</span></p>"
            for w, s in zip(labels, start)
        )
        + _submit_button()
    )
    script = "function collect(){ return {on: [...document.querySelectorAll('[role=switch]')].filter(e => e.getAttribute('aria-checked')==='true').map(e => e.getAttribute('aria-label')).sort()}; }"
    on = sorted(w for w, s in zip(labels, want) if s)
    off = sorted(w for w, s in zip(labels, want) if not s)
    return WidgetTask(
        "toggle-switches",
        "Turn on "
        + (", ".join(f'"{x}"' for x in on) or "nothing")
        + " and turn off "
        + (", ".join(f'"{x}"' for x in off) or "nothing")
        + ", then press Submit.",
        body,
        script,
        {"on": on},
    )


def use_spinner(rng: np.random.Generator) -> WidgetTask:
    start = int(rng.integers(0, 10))
    target = start + int(rng.choice([-3, -2, -1, 1, 2, 3, 4]))
    body = (
        "<p id='val'></p><button onclick='v--; draw()'>Decrease</button>"
        "<button onclick='v++; draw()'>Increase</button>" + _submit_button()
    )
    script = f"let v = {start}; function draw(){{ document.getElementById('val').textContent = 'Value: ' + v; }} function collect(){{ return {{value: v}}; }} draw();"
    return WidgetTask(
        "use-spinner",
        f"Set the value to {target} with the buttons and press Submit.",
        body,
        script,
        {"value": target},
    )


def click_collapsible(rng: np.random.Generator) -> WidgetTask:
    names = _pick(rng, WORDS, int(rng.integers(2, 5)))
    target = _pick(rng, names)
    body = "".join(
        f"<div class='card'><button aria-expanded='false' onclick=\"const d=this.nextElementSibling; d.hidden=!d.hidden; this.setAttribute('aria-expanded', String(!d.hidden))\">Section {esc(n)}</button>"
        f'<div hidden><p>Details of {esc(n)}.</p><button onclick="agSend({{confirmed: {esc(json.dumps(n))}}})">Confirm {esc(n)}</button></div></div>'
        for n in names
    )
    return WidgetTask(
        "click-collapsible",
        f'Open section "{target}" and click its Confirm button.',
        body,
        "",
        {"confirmed": target},
    )


def email_inbox(rng: np.random.Generator) -> WidgetTask:
    n = int(rng.integers(3, 7))
    senders = _pick(rng, FIRST_NAMES, n)
    subjects = _pick(rng, WORDS, n)
    k = int(rng.integers(n))
    body = (
        "<table><tr><th>From</th><th>Subject</th><th></th></tr>"
        + "".join(
            f"<tr><td>{esc(s)}</td><td>{esc(sub.title())}</td><td><button aria-label='Delete email from {esc(s)}' "
            f'onclick="agSend({{deleted: {esc(json.dumps(s))}}})">Delete</button></td></tr>'
            for s, sub in zip(senders, subjects)
        )
        + "</table>"
    )
    return WidgetTask(
        "email-inbox", f"Delete the email from {senders[k]}.", body, "", {"deleted": senders[k]}
    )


def click_menu(rng: np.random.Generator) -> WidgetTask:
    items = _pick(rng, WORDS, int(rng.integers(3, 6)))
    target = _pick(rng, items)
    body = (
        "<button aria-haspopup='menu' onclick=\"const m=document.getElementById('menu'); m.hidden=!m.hidden\">Menu</button>"
        "<div id='menu' role='menu' hidden>"
        + "".join(
            f"<div role='menuitem' onclick=\"agSend({{item: {esc(json.dumps(w))}}})\">{esc(w.title())}</div>"
            for w in items
        )
        + "</div>"
    )
    return WidgetTask(
        "click-menu", f'Open the menu and choose "{target.title()}".', body, "", {"item": target}
    )


def copy_code(rng: np.random.Generator) -> WidgetTask:
    code = "".join(str(_pick(rng, "ABCDEFGHJKLMNPQRSTUVWXYZ23456789")) for _ in range(6))
    body = (
        f"<div class='card'>Code: <b>{code}</b></div><input id='c' aria-label='Code'>"
        + _submit_button()
    )
    script = "function collect(){ return {code: document.getElementById('c').value}; }"
    return WidgetTask(
        "copy-code",
        "Type the code shown on the page into the field and press Submit.",
        body,
        script,
        {"code": code},
    )


def find_word(rng: np.random.Generator) -> WidgetTask:
    words = _pick(rng, WORDS, int(rng.integers(6, 12)))
    k = int(rng.integers(len(words)))
    ordinal = {0: "1st", 1: "2nd", 2: "3rd"}.get(k, f"{k + 1}th")
    body = f"<p>{' '.join(words)}</p><input id='w' aria-label='Word'>" + _submit_button()
    script = "function collect(){ return {word: document.getElementById('w').value.trim()}; }"
    return WidgetTask(
        "find-word",
        f"Enter the {ordinal} word of the paragraph and press Submit.",
        body,
        script,
        {"word": words[k]},
    )


def text_transform(rng: np.random.Generator) -> WidgetTask:
    word = _pick(rng, WORDS) + " " + _pick(rng, WORDS)
    body = "<input id='t' aria-label='Text'>" + _submit_button()
    script = "function collect(){ return {text: document.getElementById('t').value}; }"
    return WidgetTask(
        "text-transform",
        f'Type "{word}" in capital letters and press Submit.',
        body,
        script,
        {"text": word.upper()},
    )


def click_dialog(rng: np.random.Generator) -> WidgetTask:
    choice = _pick(rng, ["OK", "Cancel", "Close"])
    body = (
        f"<div role='dialog' class='card' aria-label='Notice'><p>{esc(_pick(rng, WORDS).title())} update available.</p>"
        + "".join(
            f"<button onclick=\"agSend({{button: '{b}'}})\">{b}</button>"
            for b in ("OK", "Cancel", "Close")
        )
        + "</div>"
    )
    return WidgetTask(
        "click-dialog", f'Close the dialog by pressing "{choice}".', body, "", {"button": choice}
    )


def enter_date(rng: np.random.Generator) -> WidgetTask:
    d = date(2020, 1, 1) + timedelta(days=int(rng.integers(0, 3000)))
    body = "<input id='d' aria-label='Date' placeholder='MM/DD/YYYY'>" + _submit_button()
    script = "function collect(){ return {date: document.getElementById('d').value.trim()}; }"
    return WidgetTask(
        "enter-date",
        f"Enter the date {d.strftime('%B')} {d.day}, {d.year} as MM/DD/YYYY and press Submit.",
        body,
        script,
        {"date": d.strftime("%m/%d/%Y")},
    )


def search_results(rng: np.random.Generator) -> WidgetTask:
    docs = [f"{a.title()} {b}" for a, b in zip(_pick(rng, WORDS, 12), _pick(rng, WORDS, 12))]
    query = docs[int(rng.integers(len(docs)))].split()[0].lower()
    hits = [d for d in docs if query in d.lower()]
    rank = int(rng.integers(len(hits)))
    target = hits[rank]
    body = "<input id='q' aria-label='Search'><button onclick='search()'>Search</button><div id='res'></div>"
    script = f"""
const DOCS = {json.dumps(docs)};
function search() {{
  const q = document.getElementById('q').value.toLowerCase().trim(); const box = document.getElementById('res'); box.textContent = '';
  DOCS.filter(d => q && d.toLowerCase().includes(q)).forEach((d, i) => {{
    const p = document.createElement('p'); const a = document.createElement('a'); a.href = '#'; a.textContent = d;
    a.onclick = (ev) => {{ ev.preventDefault(); agSend({{clicked: d}}); }}; p.append((i + 1) + '. ', a); box.appendChild(p);
  }});
}}
"""
    return WidgetTask(
        "search-results",
        f'Search for "{query}" and click result number {rank + 1}.',
        body,
        script,
        {"clicked": target},
        {"query": query},
    )


GENERATORS: dict[str, Callable[[np.random.Generator], WidgetTask]] = {
    "click-button": click_button,
    "click-link": click_link,
    "enter-text": enter_text,
    "enter-password": enter_password,
    "login-user": login_user,
    "click-checkboxes": click_checkboxes,
    "choose-radio": choose_radio,
    "select-dropdown": select_dropdown,
    "click-tab": click_tab,
    "date-picker": date_picker,
    "autocomplete": autocomplete,
    "scroll-to-find": scroll_to_find,
    "sort-list": sort_list,
    "click-color": click_color,
    "count-shapes": count_shapes,
    "toggle-switches": toggle_switches,
    "use-spinner": use_spinner,
    "click-collapsible": click_collapsible,
    "email-inbox": email_inbox,
    "click-menu": click_menu,
    "copy-code": copy_code,
    "find-word": find_word,
    "text-transform": text_transform,
    "click-dialog": click_dialog,
    "enter-date": enter_date,
    "search-results": search_results,
}
KINDS: tuple[str, ...] = tuple(GENERATORS)


def make_task(kind: str, seed: int) -> WidgetTask:
    """The task of a kind and seed (pure function of both)."""
    return GENERATORS[kind](np.random.default_rng([seed, KINDS.index(kind)]))


# -- oracle ------------------------------------------------------------------------------


def _by_name(elements: Elements, name: str, role: str | None = None) -> dict[str, Any] | None:
    return next(
        (e for e in elements if e["name"] == name and (role is None or e["role"] == role)), None
    )


def _first(elements: Elements, role: str) -> dict[str, Any] | None:
    return next((e for e in elements if e["role"] == role), None)


def _submit(elements: Elements) -> Action:
    e = _by_name(elements, "Submit", "button") or _by_name(elements, "Login", "button")
    return ("click", {"bid": e["bid"] if e else "0"})


def _fill_then_submit(elements: Elements, pairs: list[tuple[str, str]]) -> Action:
    for name, value in pairs:
        e = _by_name(elements, name, "textbox")
        if e is not None and e.get("value", "") != value:
            return ("fill", {"bid": e["bid"], "text": value})
    return _submit(elements)


def oracle(task: WidgetTask, elements: Elements, lines: list[str]) -> Action:
    """The next action that makes progress toward a correct submission."""
    x, kind = task.expected, task.kind
    click = lambda e: ("click", {"bid": e["bid"]})  # noqa: E731
    if kind in ("click-button", "click-link", "scroll-to-find"):
        e = _by_name(elements, x["clicked"])
        return click(e) if e else _submit(elements)
    if kind == "click-color":
        e = _by_name(elements, x["color"])
        return click(e) if e else _submit(elements)
    if kind == "click-dialog":
        e = _by_name(elements, x["button"], "button")
        return click(e) if e else _submit(elements)
    if kind == "email-inbox":
        e = _by_name(elements, f"Delete email from {x['deleted']}")
        return click(e) if e else _submit(elements)
    if kind in ("enter-text", "text-transform"):
        return _fill_then_submit(elements, [("Text", x["text"])])
    if kind == "enter-password":
        return _fill_then_submit(elements, [("Password", x["p1"]), ("Verify password", x["p2"])])
    if kind == "login-user":
        return _fill_then_submit(elements, [("Username", x["user"]), ("Password", x["password"])])
    if kind == "count-shapes":
        return _fill_then_submit(elements, [("Count", x["count"])])
    if kind == "copy-code":
        return _fill_then_submit(elements, [("Code", x["code"])])
    if kind == "find-word":
        return _fill_then_submit(elements, [("Word", x["word"])])
    if kind == "enter-date":
        return _fill_then_submit(elements, [("Date", x["date"])])
    if kind == "click-checkboxes":
        for e in elements:
            if e["role"] == "checkbox" and e.get("checked") != (e["name"] in x["checked"]):
                return ("check" if e["name"] in x["checked"] else "uncheck", {"bid": e["bid"]})
        return _submit(elements)
    if kind == "choose-radio":
        e = _by_name(elements, x["choice"], "radio")
        if e is not None and not e.get("checked"):
            return ("check", {"bid": e["bid"]})
        return _submit(elements)
    if kind == "select-dropdown":
        e = _first(elements, "combobox")
        if e is not None and e.get("value") != x["choice"]:
            return ("select", {"bid": e["bid"], "option": x["choice"]})
        return _submit(elements)
    if kind == "click-tab":
        e = _by_name(elements, x["clicked"], "link")
        if e is not None:
            return click(e)
        tab = _by_name(elements, f"Tab #{task.data['tab'] + 1}", "tab")
        return click(tab) if tab else _submit(elements)
    if kind == "date-picker":
        if f"Selected date: {x['date']}" in lines:
            return _submit(elements)
        e = _by_name(elements, x["date"], "button")
        if e is not None:
            return click(e)
        first = next((el for el in elements if re.fullmatch(r"\d{4}-\d\d-\d\d", el["name"])), None)
        direction = "Next month" if first is None or first["name"] < x["date"] else "Previous month"
        nav = _by_name(elements, direction, "button")
        return click(nav) if nav else _submit(elements)
    if kind == "autocomplete":
        field_ = _by_name(elements, "Country", "textbox")
        if field_ is not None and field_.get("value") == x["country"]:
            return _submit(elements)
        opt = _by_name(elements, x["country"], "option")
        if opt is not None:
            return click(opt)
        return ("fill", {"bid": field_["bid"] if field_ else "0", "text": x["country"][:3]})
    if kind == "sort-list":
        order = [
            e["name"][5:-3]
            for e in elements
            if e["name"].startswith("Move ") and e["name"].endswith(" up")
        ]
        for a, b in itertools.pairwise(order):
            if a > b:
                e = _by_name(elements, f"Move {b} up")
                return click(e) if e else _submit(elements)
        return _submit(elements)
    if kind == "toggle-switches":
        for e in elements:
            if e["role"] == "switch" and e.get("checked") != (e["name"] in x["on"]):
                return click(e)
        return _submit(elements)
    if kind == "use-spinner":
        current = next((int(line[7:]) for line in lines if line.startswith("Value: ")), None)
        if current is None or current == x["value"]:
            return _submit(elements)
        e = _by_name(elements, "Increase" if current < x["value"] else "Decrease", "button")
        return click(e) if e else _submit(elements)
    if kind == "click-collapsible":
        e = _by_name(elements, f"Confirm {x['confirmed']}", "button")
        if e is not None:
            return click(e)
        sec = _by_name(elements, f"Section {x['confirmed']}", "button")
        return click(sec) if sec else _submit(elements)
    if kind == "click-menu":
        e = _by_name(elements, x["item"].title(), "menuitem")
        if e is not None:
            return click(e)
        menu = _by_name(elements, "Menu", "button")
        return click(menu) if menu else _submit(elements)
    if kind == "search-results":
        e = _by_name(elements, x["clicked"], "link")
        box = _by_name(elements, "Search", "textbox")
        if e is not None and box is not None and box.get("value") == task.data["query"]:
            return click(e)
        if box is not None and box.get("value") != task.data["query"]:
            return ("fill", {"bid": box["bid"], "text": task.data["query"]})
        btn = _by_name(elements, "Search", "button")
        return click(btn) if btn else _submit(elements)
    return _submit(elements)


# -- the site ----------------------------------------------------------------------------


class WidgetSite(Site):
    """Serves one widget task at ``/`` and records what it submits at ``/submit``."""

    def __init__(self) -> None:
        super().__init__()
        self.task: WidgetTask | None = None
        self.kind = ""
        self.seed = 0
        self.submissions: list[Any] = []

    def reset(self, seed: int, task: Mapping[str, Any]) -> None:
        self.kind, self.seed = str(task["kind"]), int(seed)
        self.task = make_task(self.kind, self.seed)
        self.submissions = []

    def handle(self, request: Request) -> Response:
        assert self.task is not None
        if request.path == "/" and request.method == "GET":
            body = (
                f"<div class='card query'>{esc(self.task.instruction)}</div>"
                f"<div id='area'>{self.task.body}</div><p id='ag-status'></p>"
            )
            scripts = f"<script>{SEND_JS}{self.task.script}</script>"
            return Response(page(f"Widget: {self.kind}", body, scripts=scripts))
        if request.path == "/submit" and request.method == "POST":
            if len(self.submissions) < 100:
                self.submissions.append(request.json)
            return Response(json={"ok": True})
        return not_found(request.path)

    def dump(self) -> Any:
        return {"kind": self.kind, "seed": self.seed, "submissions": self.submissions}

    def load(self, state: Any) -> None:
        self.reset(state["seed"], {"kind": state["kind"]})
        self.submissions = list(state["submissions"])
