// agentgym: find the element with a data-bid, bring it into view, and return where to click.
(bid) => {
  const el = document.querySelector(`[data-bid="${CSS.escape(bid)}"]`);
  if (!el) return { error: `there is no element [${bid}] on this page` };
  if (el.checkVisibility && !el.checkVisibility({ visibilityProperty: true }))
    return { error: `element [${bid}] is not visible right now` };
  let r = el.getBoundingClientRect();
  if (r.top < 0 || r.left < 0 || r.bottom > innerHeight || r.right > innerWidth) {
    el.scrollIntoView({ block: "center", inline: "center" });
    r = el.getBoundingClientRect();
  }
  if (r.width === 0 || r.height === 0) return { error: `element [${bid}] has no size` };
  const out = { x: r.left + r.width / 2, y: r.top + r.height / 2, tag: el.tagName,
    disabled: !!(el.disabled || el.getAttribute("aria-disabled") === "true") };
  if (el.tagName === "A" && el.hasAttribute("href")) {
    const href = el.getAttribute("href");
    let target;
    try { target = new URL(href, location.href); } catch (e) { return { error: `link [${bid}] has a broken address` }; }
    if (target.origin !== location.origin) return { error: `link [${bid}] leads outside the site (${target.protocol}); blocked` };
  }
  if (el.tagName === "INPUT") out.checked = el.checked;
  else if (el.hasAttribute("aria-checked")) out.checked = el.getAttribute("aria-checked") === "true";
  return out;
}
