"""The trajectory viewer: one self-contained HTML page per ``.agtr`` file.

No network, no external scripts, fonts or images: styles and a few lines of script are
inline, screenshots are the recorded PNG bytes as ``data:`` URLs, and the per-step reward
chart is inline SVG. The page has an episode list (return, success, length, task) on the
left, which can be filtered by text and outcome and sorted by return or length, and, for the
chosen episode, its header, the reward chart, then every step: the model output, each tool
call with its arguments as text (code stays readable), the observation text and screenshots,
reward components with their weights, and errors.

Screenshots are shown at their recorded resolution (one image pixel per screen pixel, never
resampled, so page text stays legible) inside a scroll box of bounded height; a click
switches one between that and fitting the column.

The page is valid UTF-8: a lone surrogate recorded in a model output (kept in the ``.agtr``
file, see :mod:`.format`) is shown as U+FFFD.
"""

from __future__ import annotations

import base64
import html
import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agentgym.text import safe_text
from agentgym.trajectory.images import StoredImage
from agentgym.trajectory.reader import Episode, Problem, TrajectoryReader

# Below 640 px (a phone, a narrow split window) the episode list stacks above the episode.
_CSS = """
*{box-sizing:border-box}body{margin:0;font:14px/1.4 system-ui,sans-serif;color:#1d2330;
background:#f4f5f7;display:flex;height:100vh}
nav{order:-1;width:300px;overflow:auto;background:#fff;border-right:1px solid #d8dbe2;flex:none}
nav h1{font-size:15px;margin:12px}nav .meta{font-size:12px;color:#667;margin:0 12px 8px}
nav a{display:block;padding:6px 12px;border-top:1px solid #eee;color:inherit;
text-decoration:none}nav a:hover,nav a.sel{background:#e8f0fe}
.ok{color:#137333;font-weight:600}.fail{color:#b3261e;font-weight:600}
main{flex:1;overflow:auto;padding:16px 24px}.episode{display:none}.episode.show{display:block}
.card{background:#fff;border:1px solid #d8dbe2;border-radius:6px;padding:10px 14px;
margin:10px 0}.step h3{font-size:14px;margin:0 0 6px}
pre{white-space:pre-wrap;word-break:break-word;background:#f7f7f9;border:1px solid #e3e3e8;
padding:6px 8px;border-radius:4px;margin:4px 0;font:12.5px/1.35 ui-monospace,monospace}
.assistant pre{background:#eef4ff}.tool pre{background:#fff6e5}.err{color:#b3261e}
.label{font-size:11px;text-transform:uppercase;color:#667;letter-spacing:.04em}
.shotbox{max-height:60vh;overflow:auto;border:1px solid #ccd;margin:4px 0;
display:inline-block;max-width:100%;vertical-align:top}
img.shot{display:block;max-width:none;cursor:zoom-out}
.shotbox.fit{max-height:none}.shotbox.fit img.shot{max-width:100%;height:auto;cursor:zoom-in}
.shotcap{font-size:11px;color:#667}
table.kv td{padding:1px 10px 1px 0;font-size:12.5px}.problems{color:#b3261e}
table.comp{border-collapse:collapse;font-size:12.5px;margin:4px 0}
table.comp td,table.comp th{padding:1px 10px 1px 0;text-align:right}
table.comp th{font-weight:500;color:#667;font-size:11px}table.comp td:first-child,
table.comp th:first-child{text-align:left}
.pending{color:#8a6d00;font-weight:600}
nav .tools{padding:0 12px 8px;display:flex;flex-wrap:wrap;gap:4px}
nav .tools input,nav .tools select{font:inherit;font-size:12px;padding:2px 4px}
nav .tools input{flex:1 1 100%}.call{margin:4px 0}.argname{font-size:12px;color:#445}
svg.chart{max-width:100%;height:auto}.card{overflow-x:auto}
@media (max-width:640px){body{flex-direction:column;height:auto}
nav{width:auto;max-height:45vh;border-right:0;border-bottom:1px solid #d8dbe2}
main{overflow:visible;padding:8px 10px}}
"""

_JS = """
function show(id){document.querySelectorAll('.episode').forEach(e=>e.classList.toggle('show',
e.id===id));document.querySelectorAll('nav a').forEach(a=>a.classList.toggle('sel',
a.dataset.ep===id));}
document.querySelectorAll('nav a').forEach(a=>a.addEventListener('click',ev=>{
ev.preventDefault();show(a.dataset.ep);}));
document.querySelectorAll('img.shot').forEach(im=>im.addEventListener('click',()=>{
im.parentElement.classList.toggle('fit');}));
var list=document.getElementById('eplist'),q=document.getElementById('q'),
which=document.getElementById('which'),order=document.getElementById('order');
function refresh(){var text=q.value.toLowerCase(),want=which.value,key=order.value;
var items=Array.from(list.querySelectorAll('a'));
items.sort((a,b)=>key==='file'?a.dataset.i-b.dataset.i:
key==='return'?b.dataset.ret-a.dataset.ret:key==='-return'?a.dataset.ret-b.dataset.ret:
b.dataset.len-a.dataset.len);
items.forEach(a=>{list.appendChild(a);a.style.display=
(a.dataset.text.indexOf(text)>=0&&(want==='all'||a.dataset.status===want))?'':'none';});}
[q,which,order].forEach(el=>el.addEventListener('input',refresh));
var first=document.querySelector('nav a');if(first){show(first.dataset.ep);}
"""


_NAV_TOOLS = (
    "<div class='tools'><input id='q' type='search' placeholder='filter: task, env, episode'>"
    "<select id='which' aria-label='outcome'><option value='all'>all</option>"
    "<option value='success'>successes</option><option value='failure'>failures</option>"
    "<option value='unfinished'>unfinished</option></select>"
    "<select id='order' aria-label='sort'><option value='file'>file order</option>"
    "<option value='return'>return, high first</option>"
    "<option value='-return'>return, low first</option>"
    "<option value='length'>length, long first</option></select></div>"
)


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _chart(rewards: list[float], width: int = 640, height: int = 140) -> str:
    """An inline SVG bar chart of per-step rewards with a step axis and a zero line.

    Every nonzero reward gets a bar at least 2 px tall, so a small penalty beside a large
    outcome reward stays visible; hovering a bar gives its exact value.
    """
    if not rewards:
        return "<p class='label'>no steps</p>"
    lo, hi = min(0.0, *rewards), max(0.0, *rewards)
    span = (hi - lo) or 1.0
    left, right, top, bottom = 44, 8, 8, 22  # room for the value and step labels
    plot_h = height - top - bottom
    bar = min((width - left - right) / len(rewards), 40.0)
    zero = top + (hi / span) * plot_h
    parts = [
        f"<svg class='chart' xmlns='http://www.w3.org/2000/svg' width='{width}' "
        f"height='{height}' viewBox='0 0 {width} {height}' role='img' "
        f"aria-label='reward per step'>",
        f"<rect width='{width}' height='{height}' fill='#fff'/>",
    ]
    label_every = max(1, round(len(rewards) / 12))  # at most about a dozen step labels
    for i, r in enumerate(rewards):
        h = abs(r) / span * plot_h
        if r != 0:
            h = max(h, 2.0)
        y = zero - h if r >= 0 else zero
        x = left + i * bar
        color = "#1a73e8" if r >= 0 else "#d93025"
        parts.append(
            f"<rect x='{x + bar * 0.1:.1f}' y='{y:.1f}' width='{max(bar * 0.8, 1):.1f}' "
            f"height='{h:.1f}' fill='{color}'><title>step {i + 1}: {r:+.3f}</title></rect>"
        )
        if i % label_every == 0 or i == len(rewards) - 1:
            parts.append(
                f"<text x='{x + bar / 2:.1f}' y='{height - 8}' font-size='10' fill='#555' "
                f"text-anchor='middle'>{i + 1}</text>"
            )
    parts.append(
        f"<line x1='{left}' x2='{width - right}' y1='{zero:.1f}' y2='{zero:.1f}' stroke='#555'/>"
        f"<text x='{left - 4}' y='{top + 8}' font-size='10' fill='#555' "
        f"text-anchor='end'>{hi:+.2f}</text>"
        f"<text x='{left - 4}' y='{top + plot_h:.1f}' font-size='10' fill='#555' "
        f"text-anchor='end'>{lo:+.2f}</text>"
        f"<text x='{width - right}' y='{height - 8}' font-size='10' fill='#555' "
        "text-anchor='end'>step</text></svg>"
    )
    return "".join(parts)


def _images(frame: dict[str, Any]) -> str:
    out = []
    for im in (frame.get("observation") or {}).get("images", []) or []:
        if isinstance(im, StoredImage):
            data = base64.b64encode(im.png).decode("ascii")
            size = ""
            if len(im.shape) >= 2:
                height, width = int(im.shape[0]), int(im.shape[1])
                size = f" width='{width}' height='{height}'"  # 1:1 with the recorded pixels
            out.append(
                f"<div class='shotbox'><img class='shot'{size} "
                f"alt='screenshot {_e(im.sha256[:12])}' title='click: fit / actual size' "
                f"src='data:image/png;base64,{data}'></div>"
                f"<div class='shotcap'>{_e('x'.join(map(str, im.shape[:2][::-1])))} px</div>"
            )
    return "".join(out)


def _calls(calls: list[Any]) -> str:
    """Each parsed call as its name and arguments; string arguments (code) shown as text."""
    out = []
    for call in calls:
        if not isinstance(call, dict):
            out.append(_pre(call))
            continue
        args = call.get("arguments")
        parts = [f"<div class='call'><b>{_e(call.get('name', '?'))}</b>"]
        if isinstance(args, dict):
            for key, value in args.items():
                shown = (
                    value
                    if isinstance(value, str)
                    else json.dumps(value, ensure_ascii=False, default=str)
                )
                parts.append(f"<div class='argname'>{_e(key)}</div>{_pre(shown)}")
        else:
            parts.append(_pre(json.dumps(args, ensure_ascii=False, default=str)))
        parts.append("</div>")
        out.append("".join(parts))
    return "".join(out)


def _components(components: dict[str, Any], weights: dict[str, Any]) -> str:
    """Reward components as value, weight and their product (the reward is their sum)."""
    if not components:
        return ""
    rows = []
    for name, value in components.items():
        try:
            v = float(value)
        except (TypeError, ValueError):
            continue
        w = weights.get(name)
        if isinstance(w, int | float):
            rows.append(
                f"<tr><td>{_e(name)}</td><td>{v:+g}</td><td>{float(w):g}</td>"
                f"<td>{v * float(w):+.3g}</td></tr>"
            )
        else:
            rows.append(f"<tr><td>{_e(name)}</td><td>{v:+g}</td><td>?</td><td></td></tr>")
    return (
        "<table class='comp'><tr><th>component</th><th>value</th><th>weight</th>"
        f"<th>weighted</th></tr>{''.join(rows)}</table>"
    )


def _pre(text: Any) -> str:
    return f"<pre>{_e(text)}</pre>"


def _status(ep: Episode) -> str:
    """``success``, ``failure`` (terminated or truncated), else ``unfinished``.

    Unfinished: the file holds no end for the episode, or it ended without terminating or
    being truncated (the recorder closed mid-episode: ``termination="aborted"``).
    """
    if ep.success:
        return "success"
    end = ep.end or {}
    ended = end.get("termination") in ("terminated", "truncated") or bool(
        end.get("terminated") or end.get("truncated")
    )
    return "failure" if ep.complete and ended else "unfinished"


def _episode_html(ep: Episode, dom_id: str) -> str:
    start = ep.start or {}
    end = ep.end or {}
    status = {
        "success": "<span class='ok'>success</span>",
        "failure": "<span class='fail'>failure</span>",
        "unfinished": "<span class='pending'>unfinished (neither terminated nor truncated)</span>",
    }[_status(ep)]
    weights = (start.get("info") or {}).get("reward_weights") or {}
    if not isinstance(weights, dict):
        weights = {}
    rows = [
        ("episode", ep.episode_id),
        ("env", ep.env_id),
        ("task", ep.task_id),
        ("seed", ep.seed),
        ("return", f"{ep.return_:.3f}"),
        ("length", ep.length),
        ("ended by", end.get("termination", "-")),
    ]
    parts = [
        f"<section class='episode' id='{_e(dom_id)}'>",
        f"<div class='card'><h2>{_e(ep.task_id)} {status}</h2><table class='kv'>",
        "".join(f"<tr><td class='label'>{k}</td><td>{_e(v)}</td></tr>" for k, v in rows),
        "</table>",
        "<div class='label'>reward per step</div>",
        _chart(ep.rewards),
        "</div>",
    ]
    if start:
        parts.append("<div class='card step'><h3>reset</h3>")
        if start.get("system_prompt"):
            parts.append("<div class='label'>system</div>" + _pre(start["system_prompt"]))
        obs = start.get("observation") or {}
        parts.append("<div class='label'>observation</div>" + _images(start))
        parts.append(_pre(obs.get("text", "")))
        if start.get("tools"):
            names = ", ".join(
                str(fn.get("name", "?") if isinstance(fn := t.get("function"), dict) else "?")
                for t in start["tools"]
                if isinstance(t, dict)
            )
            parts.append(f"<div class='label'>tools: {_e(names)}</div>")
        parts.append("</div>")
    for step in ep.steps:
        components = step.get("reward_components") or {}
        flags = [f for f in ("terminated", "truncated") if step.get(f)]
        parts.append(
            f"<div class='card step'><h3>step {_e(step.get('step'))} &middot; reward "
            f"{float(step.get('reward', 0.0)):+.3f}"
            f"{' &middot; ' + _e(' '.join(flags)) if flags else ''}</h3>"
        )
        parts.append("<div class='assistant'><div class='label'>model output</div>")
        parts.append(_pre(step.get("action", "")) + "</div>")
        calls = step.get("tool_calls") or []
        if calls:
            parts.append("<div class='tool'><div class='label'>tool calls</div>")
            parts.append(_calls(calls if isinstance(calls, list) else [calls]) + "</div>")
        if step.get("action_valid") is False:
            parts.append("<div class='err'>invalid action</div>")
        if step.get("error"):
            parts.append(f"<div class='err'>error: {_e(step['error'])}</div>")
        parts.append("<div class='label'>observation</div>" + _images(step))
        parts.append(_pre((step.get("observation") or {}).get("text", "")))
        timings = step.get("timings") or {}
        tm = " ".join(f"{k} {v:.1f}" for k, v in timings.items() if isinstance(v, int | float))
        parts.append("<div class='label'>reward components</div>")
        parts.append(_components(components if isinstance(components, dict) else {}, weights))
        if tm:
            parts.append(f"<div class='label'>timings (ms): {_e(tm)}</div>")
        parts.append("</div>")
    parts.append("</section>")
    return "".join(parts)


def iter_html(
    path: str | os.PathLike[str],
    *,
    max_episodes: int | None = None,
    problems: list[Problem] | None = None,
) -> Iterator[str]:
    """The page in pieces, streaming episode by episode (memory: one episode at a time).

    ``problems``, if given, receives what the read skipped or repaired (also shown on the page).
    """
    with TrajectoryReader(path) as reader:
        header = reader.header
        nav: list[str] = []
        yield safe_text(
            "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{_e(Path(path).name)} - agentgym trajectory</title>"
            "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; "
            "img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'\">"
            f"<style>{_CSS}</style></head><body><main>"
        )
        count = 0
        for ep in reader.episodes():
            if max_episodes is not None and count >= max_episodes:
                break
            dom_id = f"ep{count}"
            count += 1
            status = _status(ep)
            mark = {
                "success": "<span class='ok' title='success'>&#10003;</span>",
                "failure": "<span class='fail' title='failure'>&#10007;</span>",
                "unfinished": "<span class='pending' title='unfinished'>&#8230;</span>",
            }[status]
            search = f"{ep.task_id} {ep.env_id} {ep.episode_id}".lower()
            nav.append(
                f"<a href='#{dom_id}' data-ep='{dom_id}' data-i='{count}' "
                f"data-ret='{ep.return_:.6g}' data-len='{ep.length}' data-status='{status}' "
                f"data-text='{_e(search)}'>{mark} {_e(ep.task_id)}<br>"
                f"<small>return {ep.return_:+.2f} &middot; {ep.length} steps &middot; "
                f"{_e(ep.env_id)}</small></a>"
            )
            yield safe_text(_episode_html(ep, dom_id))  # lone surrogates: U+FFFD
        if problems is not None:
            problems.extend(reader.problems)
        problem_html = "".join(f"<div class='problems'>{_e(p)}</div>" for p in reader.problems)
        meta = (
            f"agentgym {_e(header.get('agentgym_version', '?'))} &middot; schema "
            f"{_e('.'.join(map(str, reader.schema)))}<br>created "
            f"{_e(header.get('created_at', '?'))}<br>{count} episodes"
        )
        yield safe_text(
            f"</main><nav><h1>{_e(Path(path).name)}</h1><div class='meta'>{meta}</div>"
            f"{problem_html}{_NAV_TOOLS}<div id='eplist'>{''.join(nav)}</div></nav>"
            f"<script>{_JS}</script></body></html>"
        )


def render_html(
    path: str | os.PathLike[str],
    out: str | os.PathLike[str] | None = None,
    *,
    max_episodes: int | None = None,
    problems: list[Problem] | None = None,
) -> str | None:
    """Write the viewer page for ``path`` to ``out`` (or return it as a string if None).

    ``problems``, if given, receives what the read skipped or repaired. The page is written
    to a temporary file next to ``out`` and renamed over it when complete, so a failed read
    leaves no empty or partial page (and an older page at ``out`` survives it).
    """
    if out is None:
        return "".join(iter_html(path, max_episodes=max_episodes, problems=problems))
    target = Path(out)
    # a name of its own per call, created like any new file (umask permissions)
    partial = target.with_name(f".{target.name}.{uuid.uuid4().hex[:12]}.partial")
    try:
        with partial.open("x", encoding="utf-8") as f:
            for piece in iter_html(path, max_episodes=max_episodes, problems=problems):
                f.write(piece)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return None
