// agentgym site helper: forms that POST submit with fetch and the answer's body replaces this
// document's body, in place of a full page load (a common progressive enhancement). What the
// page shows afterwards is exactly the document a plain submission would have loaded: the
// redirect is followed, the title and address are taken over, a history entry is pushed (Back
// fetches the address again, as a reload of a no-store page would) and the element ids of the
// observation start again from 0, as in a new document. Sites opt in by including this
// script at the end of their pages; they answer a POST with a page or a redirect to one
// (url-encoded forms only: others submit as usual). Only the body and the title are replaced,
// so a site that opts in keeps the same <head> on all its pages. When the request fails, the
// plain submission is made instead; an answer that is no page is opened with a navigation
// (the POST is never sent twice).
(() => {
  if (window.__agSwap) return;
  window.__agSwap = true;
  const ag = () => window.__ag;
  const show = (html, url, push) => {
    const doc = new DOMParser().parseFromString(html, "text/html");
    document.title = doc.title;
    if (push) history.pushState(null, "", url);
    else if (url !== location.href) history.replaceState(null, "", url);
    document.body.replaceWith(document.adoptNode(doc.body));
    window.__agNext = 0;  // a new document's ids (observe.js) start again from 0
    window.scrollTo(0, 0);
  };
  // Leave by a navigation: the document goes, and observe.js waits for the next one.
  const navigate = (go) => { const a = ag(); if (a) a.leaving = true; go(); };
  // `failed` runs only when the request itself failed (nothing was answered)
  const load = (url, init, push, failed) =>
    fetch(url, init).then((r) => {
      const type = r.headers.get("content-type") || "";
      if (!type.startsWith("text/html")) return navigate(() => location.assign(r.url));
      return r.text().then((html) => show(html, r.url, push));
    }, () => navigate(failed));
  document.addEventListener("submit", (e) => {
    const form = e.target;
    const method = (e.submitter && e.submitter.getAttribute("formmethod")) || form.method;
    if (e.defaultPrevented || !(form instanceof HTMLFormElement) || method !== "post") return;
    if (form.enctype !== "application/x-www-form-urlencoded") return;
    if (e.submitter && e.submitter.hasAttribute("formenctype")) return;
    const action = new URL(
      (e.submitter && e.submitter.getAttribute("formaction")) || form.action, location.href);
    if (action.origin !== location.origin || !ag()) return;
    e.preventDefault();
    const body = new URLSearchParams(new FormData(form, e.submitter || null));
    // a request that failed: the plain submission, as without this script
    ag().track(load(action.href, { method: "POST", body }, true,
      () => HTMLFormElement.prototype.submit.call(form)));
  });
  // The session's reset on a page that has this script: the start page is fetched and
  // swapped in. As with a navigation to it, a new history entry is pushed, unless the address
  // is the current one (Chromium then replaces the entry).
  window.__agSwapTo = (url) => {
    const a = ag();
    if (!a || a.leaving || document.readyState !== "complete") return false;
    const push = new URL(url, location.href).href !== location.href;
    a.track(load(url, { cache: "no-store" }, push, () => location.assign(url)));
    return true;
  };
  window.addEventListener("popstate", () => {
    const a = ag();
    const p = load(location.href, { cache: "no-store" }, false, () => location.reload());
    if (a) a.track(p);
  });
})();
