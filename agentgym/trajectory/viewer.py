"""The trajectory viewer: one self-contained HTML page per ``.agtr`` file.

No network, no external scripts, fonts or images: styles and a few lines of script are
inline, screenshots are the recorded PNG bytes as ``data:`` URLs, and the per-step reward
chart is inline SVG. The page has an episode list (return, success, length, task) on the
left and, for the chosen episode, its header, the reward chart, then every step: the model
output, the parsed tool calls, the observation text and screenshots, reward components and
errors.
"""

from __future__ import annotations

import base64
import html
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agentgym.trajectory.images import StoredImage
from agentgym.trajectory.reader import Episode, TrajectoryReader

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
img.shot{max-width:100%;min-width:min(192px,100%);image-rendering:pixelated;
border:1px solid #ccd;margin:4px 0;display:block}
table.kv td{padding:1px 10px 1px 0;font-size:12.5px}.problems{color:#b3261e}
"""

_JS = """
function show(id){document.querySelectorAll('.episode').forEach(e=>e.classList.toggle('show',
e.id===id));document.querySelectorAll('nav a').forEach(a=>a.classList.toggle('sel',
a.dataset.ep===id));}
document.querySelectorAll('nav a').forEach(a=>a.addEventListener('click',ev=>{
ev.preventDefault();show(a.dataset.ep);}));
var first=document.querySelector('nav a');if(first){show(first.dataset.ep);}
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _chart(rewards: list[float], width: int = 640, height: int = 120) -> str:
    """An inline SVG bar chart of per-step rewards, zero line included."""
    if not rewards:
        return "<p class='label'>no steps</p>"
    lo, hi = min(0.0, *rewards), max(0.0, *rewards)
    span = (hi - lo) or 1.0
    pad = 18
    bar = min((width - 2 * pad) / len(rewards), 40.0)
    zero = pad + (hi / span) * (height - 2 * pad)
    parts = [
        f"<svg class='chart' xmlns='http://www.w3.org/2000/svg' width='{width}' "
        f"height='{height}' viewBox='0 0 {width} {height}' role='img' "
        f"aria-label='reward per step'>",
        f"<rect width='{width}' height='{height}' fill='#fff'/>",
    ]
    for i, r in enumerate(rewards):
        y = pad + ((hi - max(r, 0.0)) / span) * (height - 2 * pad)
        h = abs(r) / span * (height - 2 * pad)
        color = "#1a73e8" if r >= 0 else "#d93025"
        parts.append(
            f"<rect x='{pad + i * bar + bar * 0.1:.1f}' y='{y:.1f}' width='{max(bar * 0.8, 1):.1f}'"
            f" height='{max(h, 0.5):.1f}' fill='{color}'><title>step {i + 1}: {r:+.3f}</title>"
            "</rect>"
        )
    parts.append(
        f"<line x1='{pad}' x2='{width - pad}' y1='{zero:.1f}' y2='{zero:.1f}' stroke='#555'/>"
        f"<text x='2' y='12' font-size='10' fill='#555'>{hi:+.2f}</text>"
        f"<text x='2' y='{height - 3}' font-size='10' fill='#555'>{lo:+.2f}</text></svg>"
    )
    return "".join(parts)


def _images(frame: dict[str, Any]) -> str:
    out = []
    for im in (frame.get("observation") or {}).get("images", []) or []:
        if isinstance(im, StoredImage):
            data = base64.b64encode(im.png).decode("ascii")
            out.append(
                f"<img class='shot' alt='screenshot {_e(im.sha256[:12])}' "
                f"src='data:image/png;base64,{data}'>"
            )
    return "".join(out)


def _pre(text: Any) -> str:
    return f"<pre>{_e(text)}</pre>"


def _episode_html(ep: Episode, dom_id: str) -> str:
    start = ep.start or {}
    end = ep.end or {}
    status = (
        "<span class='ok'>success</span>"
        if ep.success
        else "<span class='fail'>failure</span>"
        if ep.complete
        else "<span class='fail'>incomplete</span>"
    )
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
                str((t.get("function") or {}).get("name", "?"))
                for t in start["tools"]
                if isinstance(t, dict)
            )
            parts.append(f"<div class='label'>tools: {_e(names)}</div>")
        parts.append("</div>")
    for step in ep.steps:
        components = step.get("reward_components") or {}
        comp = ", ".join(f"{k} {float(v):+g}" for k, v in components.items())
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
            parts.append(_pre(json.dumps(calls, ensure_ascii=False, default=str)) + "</div>")
        if step.get("action_valid") is False:
            parts.append("<div class='err'>invalid action</div>")
        if step.get("error"):
            parts.append(f"<div class='err'>error: {_e(step['error'])}</div>")
        parts.append("<div class='label'>observation</div>" + _images(step))
        parts.append(_pre((step.get("observation") or {}).get("text", "")))
        timings = step.get("timings") or {}
        tm = " ".join(f"{k} {v:.1f}" for k, v in timings.items() if isinstance(v, int | float))
        parts.append(f"<div class='label'>components: {_e(comp)} {('| ' + _e(tm)) if tm else ''}")
        parts.append("</div></div>")
    parts.append("</section>")
    return "".join(parts)


def iter_html(path: str | os.PathLike[str], *, max_episodes: int | None = None) -> Iterator[str]:
    """The page in pieces, streaming episode by episode (memory: one episode at a time)."""
    with TrajectoryReader(path) as reader:
        header = reader.header
        nav: list[str] = []
        yield (
            "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
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
            mark = (
                "<span class='ok'>&#10003;</span>"
                if ep.success
                else "<span class='fail'>&#10007;</span>"
            )
            nav.append(
                f"<a href='#{dom_id}' data-ep='{dom_id}'>{mark} {_e(ep.task_id)}<br>"
                f"<small>return {ep.return_:+.2f} &middot; {ep.length} steps &middot; "
                f"{_e(ep.env_id)}</small></a>"
            )
            yield _episode_html(ep, dom_id)
        problems = "".join(f"<div class='problems'>{_e(p)}</div>" for p in reader.problems)
        meta = (
            f"agentgym {_e(header.get('agentgym_version', '?'))} &middot; schema "
            f"{_e('.'.join(map(str, reader.schema)))}<br>created "
            f"{_e(header.get('created_at', '?'))}<br>{count} episodes"
        )
        yield (
            f"</main><nav><h1>{_e(Path(path).name)}</h1><div class='meta'>{meta}</div>"
            f"{problems}{''.join(nav)}</nav><script>{_JS}</script></body></html>"
        )


def render_html(
    path: str | os.PathLike[str],
    out: str | os.PathLike[str] | None = None,
    *,
    max_episodes: int | None = None,
) -> str | None:
    """Write the viewer page for ``path`` to ``out`` (or return it as a string if None)."""
    if out is None:
        return "".join(iter_html(path, max_episodes=max_episodes))
    with Path(out).open("w", encoding="utf-8") as f:
        for piece in iter_html(path, max_episodes=max_episodes):
            f.write(piece)
    return None
