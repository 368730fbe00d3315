"""Real Chromium and local web sites for web agents (no Gymnasium needed).

* :mod:`.runtime` — the browser pool: one Chromium per process, slots as tabs on their own
  origins, one event loop on a background thread, restarts on crashes.
* :mod:`.server` — the site server on 127.0.0.1 (a free port), one site per slot.
* :mod:`.session` — one slot driven with trusted input events, observed by one in-page script.
* :mod:`.dom` — the same observation computed from HTML in Python, and a text-mode browser.
* :mod:`.sites` — the web applications: widgets, shop, forms, wiki, todo.

Heavy imports (playwright) happen only when a runtime starts.
"""
