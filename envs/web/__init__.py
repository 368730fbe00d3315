"""Web family: real Chromium (Playwright) on local sites, plus browser-free text modes."""

from agentgym.registry import register

register(
    "agentgym/WebWidgets-v0",
    "agentgym.envs.web.widgets:WebWidgetsEnv",
    family="web",
    description="26 MiniWoB-like widget task kinds in real Chromium; submit the right answer",
)

register(
    "agentgym/WebShop-v0",
    "agentgym.envs.web.shop:WebShopEnv",
    family="web",
    description="WebShop-like store (3k synthetic products, BM25) in real Chromium",
)
register(
    "agentgym/WebShopText-v0",
    "agentgym.envs.web.shop:WebShopEnv",
    family="web",
    kwargs={"mode": "text"},
    description="The WebShop-like store without a browser (same observations and rewards)",
)

for _name, _module, _cls, _what in (
    (
        "Forms",
        "forms",
        "WebFormsEnv",
        "three-page registration form with validation, per-field credit",
    ),
    ("Wiki", "wiki", "WebWikiEnv", "information seeking over a small wiki, ends with answer()"),
    ("Todo", "crud", "WebTodoEnv", "to-do list CRUD app over SQLite, scored by its rows"),
):
    register(
        f"agentgym/Web{_name}-v0",
        f"agentgym.envs.web.{_module}:{_cls}",
        family="web",
        description=f"{_what} (real Chromium)",
    )
    register(
        f"agentgym/Web{_name}Text-v0",
        f"agentgym.envs.web.{_module}:{_cls}",
        family="web",
        kwargs={"mode": "text"},
        description=f"{_what} (no browser; same observations)",
    )
