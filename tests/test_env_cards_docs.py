"""The site's env-card pages and BENCHMARKS.md page (issue 26, point 4).

``scripts/mkdocs_env_cards.py`` (an mkdocs hook) renders each env module's card (its
docstring) as Markdown, one page per family; the strict site build is in
``tests/test_docs_site.py``. Here: the conversion on a card with every construct the cards
use, every registered single-agent id on its family's page, and the benchmarks page's images.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import agentgym

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location(
    "mkdocs_env_cards", ROOT / "scripts" / "mkdocs_env_cards.py"
)
assert _spec is not None and _spec.loader is not None
cards = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cards)

CARD = """Toy: reach the ``goal``.

=================  ===========================================================
ids                ``agentgym/Toy-v0``, see :class:`agentgym.core.AgentEnv`
action             ``{"d": "up"|"down"}`` or
                   nothing | something
=================  ===========================================================

Observations
    The grid::

        # wall
        @ you

    and a line.

Rewards (component: default weight)
    * ``step`` (0.1): -1 per turn.
"""

EXPECTED = """## Toy: reach the `goal`.

| | |
|---|---|
| **ids** | `agentgym/Toy-v0`, see `agentgym.core.AgentEnv` |
| **action** | `{"d": "up"|"down"}` or nothing \\| something |

### Observations

The grid:

```text
# wall
@ you
```

and a line.

### Rewards (component: default weight)

* `step` (0.1): -1 per turn.
"""


def test_a_card_becomes_markdown():
    assert cards.card_to_markdown(CARD) == EXPECTED


def test_every_single_agent_id_is_on_its_family_page_without_raw_rst():
    families = cards.family_modules()
    expected = {r.family for r in agentgym.list_envs() if not r.multi_agent}
    assert set(families) == expected and "games" in families
    for family, modules in families.items():
        page = cards.family_page(family, modules)
        ids = {r.id for r in agentgym.list_envs() if r.family == family and not r.multi_agent}
        for env_id in ids:
            assert f"`{env_id}`" in page, (family, env_id)
        prose = re.sub(r"```text\n.*?\n```", "", page, flags=re.DOTALL)
        assert "``" not in prose and not re.search(r":(mod|class|func):`", prose), family
        # one card (and so one table) per distinct card among the family's modules
        assert page.count("|---|---|") == len({cards._card_of(m) for m, _ in modules}), family


def test_the_benchmarks_page_links_images_that_exist():
    page = cards.benchmarks_page(ROOT)
    images = re.findall(r"\]\(([^)]+\.png)\)", page)
    assert images and all((ROOT / "docs" / path).is_file() for path in images), images
