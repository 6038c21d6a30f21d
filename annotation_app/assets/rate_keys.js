// Rating page helpers, installed once per tab (inert on other pages).
//
// Keyboard rating: 1..n pick the n-th choice of the highlighted sub-axis (the scores 1-6, or a
// categorical scale's levels in order) and move to the next (after the last one, into the
// justification box), N marks N/A where offered, Up/Down (or J/K) move, Ctrl+Enter submits.
// None of these act while focus is in a text field; Escape leaves a text field and returns to
// the scale. A key works by clicking the matching radio option, exactly as a mouse click would,
// so the page's one save path stores it.
//
// Nothing the annotator changed is lost: every score click and every keystroke in a text box is
// kept in this tab's sessionStorage (which a reload keeps, and other tabs do not share) until the page shows it stored (the server renders what the database
// holds into [data-mindeval-saved] / [data-mindeval-texts] on each run). After a reload the
// changes still waiting are put back on the form, in the order they were made, and so sent
// again; closing or leaving the tab while any are waiting asks for confirmation. The save line
// says "Not saved yet" while anything shown differs from what is stored.
//
// When the server refuses a stale write (another tab, device, or this tab's own previous page
// load saved meanwhile), the changes made on this page load are dropped (the page says which
// values are now stored, and asks for them again), but a change carried over from before a
// reload is kept and sent again if its field still holds what was stored when it was made:
// nobody else has changed that field, so sending it reverts nothing. (A reload right after fast
// clicks: the old page's last save can land after the new page has loaded.)
(() => {
  if (window.__mindevalRateKeys) return;
  window.__mindevalRateKeys = true;
  const PANE = ".st-key-rating-pane";
  const STORE = "mindeval-rate-pending";
  const FIELDS = ["justification", "safety_note"];
  let focus = -1;
  let item = null;
  let seen = { el: null, sig: "", at: 0 };  // the last stored-state marker and when it changed
  const restored = new Map();  // assignment → times changes kept from before this page load were put back
  const LOADED = Date.now();
  const refusals = {};  // assignment → the server's count of refused stale writes, as last seen
  const groups = () => [...document.querySelectorAll(`${PANE} [data-testid="stRadio"]`)];
  const marker = () => document.querySelector("[data-mindeval-saved]");
  const idle = () => !document.querySelector('[data-testid="stStatusWidget"] button');
  const labelOf = (g) => { const i = g.querySelector("input:checked"); return i ? i.closest("label").innerText.trim() : ""; };
  const box = (field) => document.querySelector(`${PANE} [class*="_${field}"] textarea`);
  const load = () => { try { return JSON.parse(sessionStorage.getItem(STORE) || "{}"); } catch (e) { return {}; } };
  const save = (p) => {
    for (const a of Object.keys(p)) {
      if (!Object.keys(p[a].scores || {}).length && !Object.keys(p[a].texts || {}).length) delete p[a];
    }
    sessionStorage.setItem(STORE, JSON.stringify(p));
  };
  const current = () => { const m = marker(); return m ? m.getAttribute("data-mindeval-assignment") : null; };

  function storedNow(kind, key) {  // what the page last saw stored for one field ("" when unset)
    const m = marker();
    if (!m) return "";
    const all = JSON.parse(m.getAttribute(kind === "scores" ? "data-mindeval-saved" : "data-mindeval-texts") || "{}");
    const x = kind === "scores" ? all[Number(key)] : all[key];
    return x === null || x === undefined ? "" : x;
  }

  function remember(kind, key, value) {  // a change the annotator made, kept until stored
    const a = current();
    if (!a) return;
    const p = load();
    p[a] = p[a] || { scores: {}, texts: {} };
    const before = p[a][kind][key];  // a field changed twice keeps what was stored at the first change
    p[a][kind][key] = { value, t: Date.now(), from: before ? before.from : storedNow(kind, key) };
    save(p);
  }

  function keepAfterRefusal(mine) {  // carried over from before this load, and its field untouched since
    for (const kind of ["scores", "texts"]) {
      for (const [k, e] of Object.entries(mine[kind])) {
        if (!(e.t < LOADED && "from" in e && storedNow(kind, k) === e.from)) delete mine[kind][k];
      }
    }
  }

  function notice() {  // when the server last rendered what is stored (each run renders a new marker)
    const m = marker();
    if (!m) return m;
    const sig = m.getAttribute("data-mindeval-run") + m.getAttribute("data-mindeval-saved") + m.getAttribute("data-mindeval-texts");
    if (m !== seen.el || sig !== seen.sig) seen = { el: m, sig, at: Date.now() };
    return m;
  }
  new MutationObserver(notice).observe(document.body, { subtree: true, childList: true, attributes: true,
    attributeFilter: ["data-mindeval-run"] });

  function reconcile() {  // drop what is stored; put back (once per load) what is not
    const m = notice();
    if (!m) return;
    const a = m.getAttribute("data-mindeval-assignment");
    const p = load();
    const r = m.getAttribute("data-mindeval-refused");
    if (a in refusals && refusals[a] !== r && p[a]) {  // the server refused a stale write and said so
      keepAfterRefusal(p[a]);
      save(p);
    }
    refusals[a] = r;
    const mine = p[a];
    if (!mine || !idle()) return;
    const stored = JSON.parse(m.getAttribute("data-mindeval-saved"));
    const texts = JSON.parse(m.getAttribute("data-mindeval-texts"));
    const gs = groups();
    const tries = restored.get(a) || 0;  // changes from before this page load go back on the form
    const putBack = tries < 20;
    for (const [k, e] of Object.entries(mine.scores)) {
      if (stored[Number(k)] === e.value) { if (seen.at > e.t) delete mine.scores[k]; continue; }
      if (putBack && e.t < LOADED && gs[Number(k)] && labelOf(gs[Number(k)]) !== e.value) {
        const label = [...gs[Number(k)].querySelectorAll('[role="radiogroup"] label')].find((l) => l.innerText.trim() === e.value);
        const input = label && label.querySelector("input");
        if (input && !input.disabled) { label.click(); restored.set(a, tries + 1); }
      }
    }
    for (const [f, e] of Object.entries(mine.texts)) {
      if ((texts[f] || "") === e.value) { if (seen.at > e.t) delete mine.texts[f]; continue; }
      const b = box(f);
      if (putBack && e.t < LOADED && b && !b.disabled && b.value !== e.value) {
        restored.set(a, tries + 1);
        const set = Object.getOwnPropertyDescriptor(HTMLTextAreaElement.prototype, "value").set;
        b.focus();
        set.call(b, e.value);
        b.dispatchEvent(new Event("input", { bubbles: true }));
        b.blur();  // Streamlit commits a text box when it loses focus
      }
    }
    save(p);
  }

  function mark() {
    const gs = groups();
    const now = current();
    if (now !== item) { item = now; focus = -1; }
    reconcile();
    if (!gs.length) return gs;
    status(gs);
    if (focus < 0 || focus >= gs.length) {
      focus = gs.findIndex((g) => !g.querySelector("input:checked"));
      if (focus < 0) focus = 0;
    }
    gs.forEach((g, i) => g.classList.toggle("mindeval-focus", i === focus));
    return gs;
  }
  function status(gs) {
    const el = marker();
    if (!el) return;
    const saved = JSON.parse(el.getAttribute("data-mindeval-saved"));
    const texts = JSON.parse(el.getAttribute("data-mindeval-texts") || "{}");
    const shown = gs.map(labelOf);
    const same = shown.length === saved.length && shown.every((x, k) => x === saved[k]);
    const typed = FIELDS.some((f) => { const b = box(f); return b && b.value !== (texts[f] || ""); });
    const text = !same ? "… Not saved yet: saving your latest choices"
      : typed ? "… Text not saved yet: saved when you leave the box"
      : el.getAttribute("data-mindeval-text");
    if (el.textContent !== text) el.textContent = text;
    el.setAttribute("data-mindeval-state", same && !typed ? "saved" : "saving");
  }
  function show(gs) {
    if (gs[focus]) gs[focus].scrollIntoView({ block: "nearest" });
  }
  function move(step) {
    const gs = mark();
    if (!gs.length) return;
    focus = Math.max(0, Math.min(gs.length - 1, focus + step));
    mark();
    show(gs);
  }
  function choose(pick) {  // a 1-based position among the choices other than N/A, or "N/A"
    const gs = mark();
    const g = gs[focus];
    if (!g) return false;
    const options = [...g.querySelectorAll('[role="radiogroup"] label')];
    const label = pick === "N/A" ? options.find((l) => l.innerText.trim() === "N/A")
      : options.filter((l) => l.innerText.trim() !== "N/A")[pick - 1];
    const input = label && label.querySelector("input");
    if (!input || input.disabled) return false;
    remember("scores", String(focus), label.innerText.trim());
    label.click();
    input.blur();
    if (focus < gs.length - 1) {
      focus += 1;
      mark();
      show(gs);
    } else {  // the last score: on to the justification
      const b = box("justification");
      if (b) { b.focus(); b.scrollIntoView({ block: "nearest" }); }
    }
    return true;
  }
  function submit() {
    const button = [...document.querySelectorAll("button")].find((b) => b.innerText.trim() === "Submit rating");
    if (!button || button.disabled) return;
    const active = document.activeElement;
    if (active && active.tagName === "TEXTAREA") active.blur(); // commits the text first
    setTimeout(() => button.click(), 80);
  }
  const isText = (t) => t && (t.tagName === "TEXTAREA" || t.tagName === "SELECT" || t.isContentEditable ||
    (t.tagName === "INPUT" && t.type !== "radio" && t.type !== "checkbox"));
  function toScale() {  // Escape: leave the text field, keys rate again
    const gs = mark();
    const g = gs[focus];
    if (!g) return;
    g.setAttribute("tabindex", "-1");
    g.focus({ preventScroll: true });
    show(gs);
  }
  document.addEventListener("keydown", (e) => {
    if (!document.querySelector(PANE)) return;
    if ((e.ctrlKey || e.metaKey) && e.key === "Enter") {
      e.preventDefault();
      e.stopPropagation();
      submit();
      return;
    }
    const t = e.target;
    const a = document.activeElement;
    if (e.key === "Escape" && (isText(t) || isText(a))) {
      (isText(t) ? t : a).blur();  // commits a text box
      toScale();
      e.preventDefault();
      return;
    }
    if (isText(t) || isText(a) || e.altKey || e.ctrlKey || e.metaKey) return;
    let done = false;
    if (/^[1-9]$/.test(e.key)) done = choose(Number(e.key));
    else if (e.key === "n" || e.key === "N") done = choose("N/A");
    else if (e.key === "ArrowDown" || e.key === "j") { move(1); done = true; }
    else if (e.key === "ArrowUp" || e.key === "k") { move(-1); done = true; }
    if (done) { e.preventDefault(); e.stopPropagation(); }
  }, true);
  document.addEventListener("click", (e) => {
    const g = e.isTrusted && e.target.closest && e.target.closest(`${PANE} [data-testid="stRadio"]`);
    if (!g) return;
    const label = e.target.closest('[role="radiogroup"] label');
    const input = label && label.querySelector("input");
    focus = groups().indexOf(g);
    if (label && input && !input.disabled) remember("scores", String(focus), label.innerText.trim());
    mark();
  }, true);
  document.addEventListener("input", (e) => {
    const t = e.target;
    if (!t || t.tagName !== "TEXTAREA" || !t.closest(PANE)) return;
    const f = FIELDS.find((x) => t.closest(`[class*="_${x}"]`));
    if (f) remember("texts", f, t.value);
  }, true);
  window.addEventListener("beforeunload", (e) => {
    const a = current();
    const p = load();
    const waiting = a && p[a] && (Object.keys(p[a].scores).length || Object.keys(p[a].texts).length);
    const el = marker();
    if (waiting || (el && el.getAttribute("data-mindeval-state") === "saving")) {
      e.preventDefault();
      e.returnValue = "";  // the browser asks whether to leave; the changes stay kept here meanwhile
    }
  });
  setInterval(mark, 200);
})();
