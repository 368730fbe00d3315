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
  const leave = () => { window.__ag.leaving = true; };
  window.addEventListener("beforeunload", leave, true);
  // Form submissions and link clicks navigate asynchronously: flag them as soon as they are
  // certain (bubble phase on window runs last, after any preventDefault of the page).
  window.addEventListener("submit", (e) => { if (!e.defaultPrevented) leave(); });
  window.addEventListener("click", (e) => {
    if (e.defaultPrevented || !(e.target instanceof Element)) return;
    const a = e.target.closest("a[href]");
    if (!a || a.target === "_blank") return;
    let to;
    try { to = new URL(a.href, location.href); } catch (err) { return; }
    const here = new URL(location.href);
    if (to.origin === here.origin && to.pathname === here.pathname && to.search === here.search && to.hash) return;
    if (to.protocol !== "http:" && to.protocol !== "https:") return;
    leave();
  });
})();
