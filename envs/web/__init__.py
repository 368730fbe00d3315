"""Web family: real Chromium (Playwright) on local sites, plus browser-free text modes."""

from agentgym.registry import register

register(
    "agentgym/WebWidgets-v0",
    "agentgym.envs.web.widgets:WebWidgetsEnv",
    family="web",
    description="26 MiniWoB-like widget task kinds in real Chromium; submit the right answer",
)
