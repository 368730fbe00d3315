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
  // True when going to `url` unloads this document (not a jump to an anchor of this page,
  // not a javascript:/mailto: address).
  const unloads = (url) => {
    let to;
    try { to = new URL(url, location.href); } catch (err) { return false; }
    const here = new URL(location.href);
    if (to.origin === here.origin && to.pathname === here.pathname && to.search === here.search && to.hash) return false;
    return to.protocol === "http:" || to.protocol === "https:";
  };
  window.addEventListener("click", (e) => {
    if (e.defaultPrevented || !(e.target instanceof Element)) return;
    const a = e.target.closest("a[href]");
    if (!a || a.target === "_blank") return;
    if (unloads(a.href)) leave();
  });
  // A session is one tab: whatever would open a new window or tab is folded into this tab,
  // so the action does what its plain form does (Enter, a click, a navigation) instead of
  // leaving the tab waiting for a load that happens elsewhere. Capture phase on window runs
  // first, before any handler of the page.
  const MODIFIED = (e) => e.shiftKey || e.ctrlKey || e.metaKey;
  // What was folded, for the next observation (observe.js reads and clears it); the tab's
  // sessionStorage outlives the navigation the folded action starts.
  const folded = (what) => { try { sessionStorage.setItem("__agFolded", what); } catch (err) {} };
  window.addEventListener("keydown", (e) => {
    if (e.key !== "Enter" || !MODIFIED(e) || !(e.target instanceof Element)) return;
    const el = e.target;
    if (el.tagName === "TEXTAREA" || el.isContentEditable) return;
    const keys = [e.ctrlKey && "Control", e.metaKey && "Meta", e.shiftKey && "Shift"];
    const combo = keys.filter(Boolean).join("+") + "+Enter";
    if (el.tagName === "INPUT" && el.form) {
      e.preventDefault();
      folded(`${combo} would submit the form into a new window; it was submitted in this tab`);
      // what a plain Enter does (implicit submission: activate the default button), same tab
      const button = el.form.querySelector(
        "button:not([type]), button[type=submit], input[type=submit], input[type=image]");
      if (button) button.click();
      else el.form.requestSubmit();
    } else if (el.closest("a[href]")) {
      e.preventDefault();
      folded(`${combo} would open the link in a new window; it was opened in this tab`);
      el.closest("a[href]").click();  // a plain activation, folded by the click rule below
    }
  }, true);
  const fold = (e) => {
    if (!(e.target instanceof Element)) return;
    const a = e.target.closest("a[href]");
    if (!a || !(MODIFIED(e) || e.button === 1 || (a.target && a.target !== "_self"))) return;
    e.preventDefault();
    folded("the link would open in a new window; it was opened in this tab");
    if (unloads(a.href)) {
      leave();
      location.assign(a.href);
    }
  };
  window.addEventListener("click", fold, true);
  window.addEventListener("auxclick", fold, true);
  window.addEventListener("submit", (e) => {
    const target = (e.submitter && e.submitter.getAttribute("formtarget")) || e.target.target;
    if (target && target !== "_self") {
      e.submitter && e.submitter.removeAttribute("formtarget");
      e.target.target = "_self";
      folded("the form would submit into a new window; it was submitted in this tab");
    }
  }, true);
  window.open = function (url) {
    folded("the page asked for a new window; none was opened (a session is one tab)");
    if (url !== undefined && url !== null && unloads(String(url))) {
      folded("the page asked for a new window; its address was opened in this tab");
      leave();
      location.assign(String(url));
    }
    return null;
  };
})();
