// Keyboard rating on the rating page: 1..n pick the n-th choice of the highlighted sub-axis
// (the scores 1-6, or a categorical scale's levels in order) and move to the next (after
// the last one, into the justification box), N marks N/A where offered, Up/Down (or J/K)
// move, Ctrl+Enter submits. A key works by clicking the matching radio option, exactly as
// a mouse click would, so the page's one save path stores it. The save line says "Not saved yet" while any score shown differs
// from what the server last confirmed as stored. Installed once per tab; inert elsewhere.
(() => {
  if (window.__mindevalRateKeys) return;
  window.__mindevalRateKeys = true;
  const PANE = ".st-key-rating-pane";
  let focus = -1;
  let item = null;
  const groups = () => [...document.querySelectorAll(`${PANE} [data-testid="stRadio"]`)];
  function mark() {
    const gs = groups();
    const marker = document.querySelector("[data-mindeval-item]");
    const now = marker ? marker.getAttribute("data-mindeval-item") : null;
    if (now !== item) { item = now; focus = -1; }
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
    const el = document.querySelector("[data-mindeval-saved]");
    if (!el) return;
    const saved = JSON.parse(el.getAttribute("data-mindeval-saved"));
    const shown = gs.map((g) => {
      const i = g.querySelector("input:checked");
      return i ? i.closest("label").innerText.trim() : "";
    });
    const same = shown.length === saved.length && shown.every((x, k) => x === saved[k]);
    const text = same ? el.getAttribute("data-mindeval-text") : "… Not saved yet: saving your latest choices";
    if (el.textContent !== text) el.textContent = text;
    el.setAttribute("data-mindeval-state", same ? "saved" : "saving");
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
    label.click();
    input.blur();
    if (focus < gs.length - 1) {
      focus += 1;
      mark();
      show(gs);
    } else {  // the last score: on to the justification
      const box = document.querySelector(`${PANE} textarea`);
      if (box) { box.focus(); box.scrollIntoView({ block: "nearest" }); }
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
  document.addEventListener("keydown", (e) => {
    if (!document.querySelector(PANE)) return;
    if ((e.ctrlKey || e.metaKey) && e.key === "Enter") {
      e.preventDefault();
      e.stopPropagation();
      submit();
      return;
    }
    const t = e.target;
    const typing = t && (t.tagName === "TEXTAREA" || t.tagName === "SELECT" || t.isContentEditable ||
      (t.tagName === "INPUT" && t.type !== "radio"));
    if (typing || e.altKey || e.ctrlKey || e.metaKey) return;
    let done = false;
    if (/^[1-9]$/.test(e.key)) done = choose(Number(e.key));
    else if (e.key === "n" || e.key === "N") done = choose("N/A");
    else if (e.key === "ArrowDown" || e.key === "j") { move(1); done = true; }
    else if (e.key === "ArrowUp" || e.key === "k") { move(-1); done = true; }
    if (done) { e.preventDefault(); e.stopPropagation(); }
  }, true);
  document.addEventListener("click", (e) => {
    const g = e.isTrusted && e.target.closest && e.target.closest(`${PANE} [data-testid="stRadio"]`);
    if (g) { focus = groups().indexOf(g); mark(); }
  }, true);
  setInterval(mark, 200);
})();
