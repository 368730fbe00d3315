// agentgym page helper: installed in every document (init script) and included by site pages.
// It tracks the site's own requests so an observation can wait for them, and notes when the
// document starts to unload so the driver knows a navigation is under way.
(() => {
  if (window.__ag) return;
  const pending = new Set();
  window.__ag = {
    leaving: false,
    pending,
    track(p) {
      pending.add(p);
      p.finally(() => pending.delete(p));
      return p;
    },
    post(url, data) {
      return this.track(
        fetch(url, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(data),
        }).then((r) => r.json())
      );
    },
  };
  window.addEventListener("beforeunload", () => { window.__ag.leaving = true; }, true);
})();
