"""mkdocs hook: mark every code span that holds an env id, so the site's CSS keeps it whole.

Material lets code spans break anywhere, which in a narrow table column splits
``agentgym/WebShopText-v0`` mid-word. This hook adds ``class="env-id"`` to each rendered
``<code>`` whose whole text is an id (``namespace/Name-vN``); ``docs/stylesheets/agentgym.css``
gives that class ``white-space: nowrap``. Registered in ``mkdocs.yml`` under ``hooks:``.
"""

from __future__ import annotations

import re
from typing import Any

#: An env id as Gymnasium spells it (optional namespace, name, version), alone in a span.
ENV_ID_SPAN = re.compile(r"<code>((?:[A-Za-z0-9_.-]+/)?[A-Za-z0-9_.-]+-v\d+)</code>")


def mark_env_ids(html: str) -> str:
    """``html`` with each ``<code>ID</code>`` turned into ``<code class="env-id">ID</code>``."""
    return ENV_ID_SPAN.sub(r'<code class="env-id">\1</code>', html)


def on_page_content(html: str, **kwargs: Any) -> str:
    """mkdocs hook: the page's rendered body, its env-id code spans marked."""
    return mark_env_ids(html)
