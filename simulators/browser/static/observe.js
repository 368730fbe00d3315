// agentgym observation: tag interactive elements with stable data-bid ids (kept for the
// document's lifetime) and list them, in document order, interleaved with visible text.
// The Python mirror in agentgym.simulators.browser.dom follows exactly the same rules.
async () => {
  if (document.readyState === "loading")
    await new Promise((r) => document.addEventListener("DOMContentLoaded", r, { once: true }));
  const ag = window.__ag;
  if (ag && ag.pending.size) await Promise.allSettled([...ag.pending]);
  if (ag && ag.leaving) return { leaving: true };
  const SKIP = new Set(["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "HEAD", "OPTION"]);
  const TEXT_INPUTS = new Set(["", "text", "search", "email", "number", "password", "tel", "url"]);
  const ARIA_ROLES = new Set(["button", "link", "tab", "option", "checkbox", "radio",
    "menuitem", "switch", "textbox", "combobox", "treeitem"]);
  const norm = (s) => (s || "").replace(/\s+/g, " ").trim();
  const cut = (s, n) => (s.length > n ? s.slice(0, n) + "…" : s);
  const q = (s) => JSON.stringify(s);
  let next = window.__agNext || 0;
  const lines = [];
  const elements = [];
  function roleOf(el) {
    const aria = el.getAttribute("role");
    if (aria && ARIA_ROLES.has(aria)) return aria;
    const tag = el.tagName;
    if (tag === "A" && el.hasAttribute("href")) return "link";
    if (tag === "BUTTON") return "button";
    if (tag === "SELECT") return "combobox";
    if (tag === "TEXTAREA") return "textbox";
    if (tag === "INPUT") {
      const t = (el.getAttribute("type") || "").toLowerCase();
      if (t === "hidden") return null;
      if (t === "submit" || t === "button" || t === "reset") return "button";
      if (t === "checkbox") return "checkbox";
      if (t === "radio") return "radio";
      if (TEXT_INPUTS.has(t)) return "textbox";
    }
    return null;
  }
  function nameOf(el, role) {
    const label = el.getAttribute("aria-label");
    if (label) return norm(label);
    if (el.tagName === "INPUT") {
      const t = (el.getAttribute("type") || "").toLowerCase();
      if (t === "submit" || t === "button" || t === "reset") return norm(el.value || "Submit");
      return norm(el.getAttribute("placeholder") || el.getAttribute("name") || "");
    }
    if (el.tagName === "SELECT" || el.tagName === "TEXTAREA")
      return norm(el.getAttribute("placeholder") || el.getAttribute("name") || "");
    return norm(el.textContent);
  }
  function describe(el, role, bid) {
    const info = { bid, role, name: cut(nameOf(el, role), 100) };
    let line = `[${bid}] ${role} ${q(info.name)}`;
    if (el.tagName === "SELECT") {
      const opts = [...el.options].map((o) => norm(o.textContent));
      const sel = el.selectedIndex >= 0 ? opts[el.selectedIndex] : "";
      info.value = sel; info.options = opts;
      line += ` value=${q(sel)} options=${q(opts)}`;
    } else if (role === "textbox" && (el.tagName === "INPUT" || el.tagName === "TEXTAREA")) {
      info.value = el.value;
      if (el.value) line += ` value=${q(cut(el.value, 200))}`;
    } else if (role === "checkbox" || role === "radio" || role === "switch") {
      const checked = el.tagName === "INPUT" ? el.checked : el.getAttribute("aria-checked") === "true";
      info.checked = checked;
      line += checked ? " checked" : " unchecked";
    } else if (role === "tab" || role === "option") {
      const sel = el.getAttribute("aria-selected") === "true";
      info.selected = sel;
      if (sel) line += " selected";
    }
    if (el.disabled || el.getAttribute("aria-disabled") === "true") {
      info.disabled = true; line += " disabled";
    }
    elements.push(info);
    lines.push(line);
  }
  function walk(node, inside) {
    for (const ch of node.childNodes) {
      if (ch.nodeType === 3) {
        if (!inside) { const t = norm(ch.data); if (t) lines.push(cut(t, 500)); }
        continue;
      }
      if (ch.nodeType !== 1) continue;
      if (SKIP.has(ch.tagName) || ch.hidden || ch.getAttribute("aria-hidden") === "true") continue;
      if (ch.checkVisibility && !ch.checkVisibility({ visibilityProperty: true })) continue;
      const role = roleOf(ch);
      if (role) {
        let bid = ch.getAttribute("data-bid");
        if (bid === null) { bid = String(next++); ch.setAttribute("data-bid", bid); }
        describe(ch, role, bid);
        walk(ch, true);
      } else {
        walk(ch, inside);
      }
    }
  }
  if (document.body) walk(document.body, false);
  window.__agNext = next;
  let search = location.search;
  try { search = decodeURIComponent(search.replace(/\+/g, " ")); } catch (e) {}
  let folded = null;  // a new-window request the page helper folded into this tab (agent.js)
  try {
    folded = sessionStorage.getItem("__agFolded");
    if (folded !== null) sessionStorage.removeItem("__agFolded");
  } catch (e) {}
  return { leaving: false, lines, elements, title: norm(document.title),
           url: location.pathname + search, href: location.href, folded };
}
