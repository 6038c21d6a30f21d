// Rating page helpers, installed once per tab (inert on other pages).
//
// Keyboard rating: 1..n pick the n-th choice of the highlighted sub-axis (the scores 1-6, or a
// categorical scale's levels in order) and move to the next (after the last one, into the
// justification box), N marks N/A where offered, Up/Down (or J/K) move, Ctrl+Enter submits.
// None of these act while focus is in a text field; Escape leaves a text field and returns to
// the scale. A key works by clicking the matching radio option, exactly as a mouse click would,
// so the page's one save path stores it.
//
// A field is always found by its sub-axis id, never by its position: the server renders the form
// key and the sub-axis ids into the stored-state marker ([data-mindeval-saved]), and a sub-axis's
// radio group is the one element carrying the class "st-key-" + form key + "_" + sub-axis id. While Streamlit
// re-renders, the page can hold a stale copy of the form beside (or mixed into) the new one; then
// the marker, the pane's groups and the ids do not match one to one, and nothing is put back,
// retried or picked by key until they do. (Positions into such a mixed list once sent a carried-over
// score to the wrong sub-axis.)
//
// Nothing the annotator changed is lost: every score click and every keystroke in a text box is
// kept in localStorage under the rating's owner (user, study, transcript) and this tab's id until
// the page shows it stored (the server renders what the database holds into the marker on each
// run). A reload keeps the tab's id (sessionStorage), so the tab finds its own changes; a tab that
// died without its leave prompt (a crash, a killed browser) stops beating, and the next tab that
// opens the same transcript adopts its changes. Changes from before this page load go back on the
// form and are sent again, and the page says "Restored N unsent changes". Two live tabs never take
// each other's changes. A change not seen stored is sent again (put back on the form, or stored by
// the save line's hidden button, whose run never interrupts a page run and the click it carries)
// with backoff (1, 2, 4 … 15 s), and at once when the connection comes back. Closing the tab while any change waits asks for confirmation. The save line says
// "Not saved yet" while anything shown differs from what is stored.
//
// When the server refuses a stale write (another tab, device, or this tab's own previous page
// load saved meanwhile), the changes made on this page load are dropped (the page says which
// values are now stored, and asks for them again), but a change carried over from before this
// page load is kept and sent again if its field still holds what was stored when it was made:
// nobody else has changed that field, so sending it reverts nothing.
//
// Ratings at the judge's unit (the marker's data-mindeval-mode): "question" forms show a target's
// questions as the answers reach them (1 = Yes, 2 = No, 3 or N = Not relevant, then the next
// question; focus waits for a question that is still on its way); "reply" forms rate one
// clinician reply at a time (digits pick its level, letters toggle its issue flags, ←/→ go to the
// previous/next reply). A field is a radio group or a checkbox (a flag: "yes" when set). Every field
// the form may show is in data-mindeval-known with its stored label, so a change kept for a field
// not on screen (another reply, a question not yet reached) is kept until it is stored or the
// stored answers no longer reach it (data-mindeval-moot).
(() => {
  if (window.__mindevalRateKeys) return;
  window.__mindevalRateKeys = true;
  const PANE = ".st-key-rating-pane";
  const KEEP = "mindeval-rate:";  // localStorage: KEEP + owner + "|" + tab → {scores, texts} not yet stored
  const BEAT = "mindeval-rate-beat:";  // localStorage: BEAT + tab → when that tab last ran
  const TAB_KEY = "mindeval-rate-tab";  // sessionStorage: this tab's id (a reload keeps it)
  const LEFT_KEY = "mindeval-rate-left";  // sessionStorage: set when this tab's page was left (a reload)
  const FIELDS = ["justification", "safety_note"];
  const ALIVE_MS = 6000;  // a tab that has not beaten for this long is gone
  const MAX_TRIES = 12;
  const LOADED = Date.now();
  let focus = -1;  // the highlighted sub-axis, as a position in the form's sub-axis order
  let owner = null;
  let seen = { el: null, sig: "", at: 0, run: 0 };  // the last stored-state marker and when it changed
  const refusals = {};  // owner → the server's count of refused stale writes, as last seen
  const announced = new Set();  // owners whose carried-over changes were counted for the notice
  let restoredCount = 0;
  const pendingFocus = { done: false };  // question forms: the justification was focused for the last answer
  // Scores clicked while a freshly loaded page shows the form but not yet its marker (rendered after
  // the form): kept here and remembered under the first marker that comes (a reload soon after lost them)
  const early = [];

  const now = () => Date.now();
  const parse = (s, fallback) => { try { const x = JSON.parse(s); return x === null || x === undefined ? fallback : x; } catch (e) { return fallback; } };
  const attr = (m, name, fallback) => parse(m.getAttribute(name), fallback);
  const idle = () => !document.querySelector('[data-testid="stStatusWidget"] button');
  const GROUPS = '[data-testid="stRadio"], [data-testid="stCheckbox"]';
  const isBox = (g) => g.getAttribute("data-testid") === "stCheckbox";
  const labelOf = (g) => {
    if (isBox(g)) { const i = g.querySelector("input"); return i && i.checked ? "yes" : ""; }
    const i = g.querySelector("input:checked"); return i ? i.closest("label").innerText.trim() : "";
  };
  const modeOf = (m) => (m && m.getAttribute("data-mindeval-mode")) || "conversation";
  const box = (field) => document.querySelector(`${PANE} [class*="_${field}"] textarea`);
  const setLocal = (k, v) => { try { localStorage.setItem(k, v); } catch (e) { /* full or blocked: the leave prompt still guards */ } };

  function tabId() {  // a new id when another live tab holds this one (a duplicated tab copies sessionStorage)
    let t = sessionStorage.getItem(TAB_KEY);
    const reloaded = sessionStorage.getItem(LEFT_KEY);
    sessionStorage.removeItem(LEFT_KEY);
    const beat = t ? Number(localStorage.getItem(BEAT + t) || 0) : 0;
    if (!t || (!reloaded && now() - beat < ALIVE_MS)) {
      t = `${now().toString(36)}${Math.random().toString(36).slice(2, 10)}`;
      sessionStorage.setItem(TAB_KEY, t);
    }
    return t;
  }
  const TAB = tabId();
  const beat = () => setLocal(BEAT + TAB, String(now()));
  beat();

  function marker() {  // the one stored-state marker (none while a stale copy sits beside the new one)
    const ms = document.querySelectorAll("[data-mindeval-saved]");
    return ms.length === 1 ? ms[0] : null;
  }
  const subsOf = (m) => attr(m, "data-mindeval-subaxes", []);
  function groupOf(m, sub) {  // the radio group of one sub-axis on the form the marker describes
    const form = m.getAttribute("data-mindeval-form");
    if (!form) return null;
    const els = document.querySelectorAll(`${PANE} .st-key-${CSS.escape(`${form}_${sub}`)}`);
    if (els.length !== 1) return null;
    return els[0].querySelector(GROUPS);
  }
  function form(m) {  // the form's groups in sub-axis order, or null while it is not exactly on screen
    if (!m) return null;
    const subs = subsOf(m);
    const all = document.querySelectorAll(`${PANE} :is(${GROUPS})`);
    if (!subs.length || all.length !== subs.length) return null;
    const gs = subs.map((s) => groupOf(m, s));
    return gs.every((g) => g) ? gs : null;
  }
  function keysOf(g) {  // the widget-key classes of the element holding group g
    const c = g.closest('[class*="st-key-"]');
    return c ? [...c.classList] : [];
  }
  function subOfKeys(m, keys) {  // the sub-axis id these widget-key classes name on the marker's form
    const prefix = `st-key-${m.getAttribute("data-mindeval-form")}_`;
    const cls = keys.find((x) => x.startsWith(prefix));
    const sub = cls && cls.slice(prefix.length);
    return sub && subsOf(m).includes(sub) ? sub : null;
  }
  const subOfGroup = (m, g) => subOfKeys(m, keysOf(g));  // a clicked group's sub-axis on the marker's form
  function markerOf(g) {  // the marker of the form that holds group g: the newest when a stale copy of
    // the page sits beside the new one during a run (marker() is null then, and a flag ticked at that
    // moment, right before a reload, was not kept)
    const hits = [...document.querySelectorAll("[data-mindeval-saved]")].filter((m) => subOfGroup(m, g));
    return hits.length ? hits[hits.length - 1] : null;
  }
  function ratingOf(g) {  // markerOf(g), when every marker on the page is for the same rating: a score
    // clicked while a stale copy of this rating's form sits beside the new one is kept (a reload right
    // after it lost it); a copy of another transcript's form takes no click
    const m = markerOf(g);
    const o = m && m.getAttribute("data-mindeval-owner");
    const all = [...document.querySelectorAll("[data-mindeval-saved]")];
    return o && all.every((x) => x.getAttribute("data-mindeval-owner") === o) ? m : null;
  }
  function storedScores(m) {  // field id → stored label ("" when unset): every field the form may show
    const subs = subsOf(m);
    const saved = attr(m, "data-mindeval-saved", []);
    const known = attr(m, "data-mindeval-known", {});
    return { ...known, ...Object.fromEntries(subs.map((s, i) => [s, saved[i] === null || saved[i] === undefined ? "" : saved[i]])) };
  }
  const storedTexts = (m) => attr(m, "data-mindeval-texts", {});
  function storedNow(m, kind, key) {  // what the page last saw stored for one field ("" when unset)
    const x = kind === "scores" ? storedScores(m)[key] : storedTexts(m)[key];
    return x === null || x === undefined ? "" : x;
  }

  const keyOf = (o, tab) => `${KEEP}${o}|${tab}`;
  const empty = () => ({ scores: {}, texts: {} });
  function load(o, tab = TAB) {
    const x = parse(localStorage.getItem(keyOf(o, tab)), null);
    return x && typeof x === "object" ? { scores: x.scores || {}, texts: x.texts || {} } : empty();
  }
  function save(o, x) {
    if (!Object.keys(x.scores).length && !Object.keys(x.texts).length) localStorage.removeItem(keyOf(o, TAB));
    else setLocal(keyOf(o, TAB), JSON.stringify(x));
  }
  const waiting = (x) => Object.keys(x.scores).length + Object.keys(x.texts).length;

  function remember(kind, key, value, m = marker()) {  // a change the annotator made, kept until stored
    const o = m && m.getAttribute("data-mindeval-owner");
    if (!o) return;
    const x = load(o);
    const before = x[kind][key];  // a field changed twice keeps what was stored at the first change
    x[kind][key] = { value, t: now(), from: before ? before.from : storedNow(m, kind, key) };
    save(o, x);
  }

  function adopt(o, mine, m) {  // changes kept by a tab that is gone, for the same rating
    let n = 0;
    const prefix = `${KEEP}${o}|`;
    for (let i = localStorage.length - 1; i >= 0; i--) {
      const k = localStorage.key(i);
      if (!k || !k.startsWith(prefix)) continue;
      const tab = k.slice(prefix.length);
      if (tab === TAB) continue;
      const last = Number(localStorage.getItem(BEAT + tab) || 0);
      if (now() - last < ALIVE_MS) continue;  // a live tab: its changes are its own
      const theirs = load(o, tab);
      for (const kind of ["scores", "texts"]) {
        for (const [f, e] of Object.entries(theirs[kind])) {
          const have = mine[kind][f];
          if (have && have.t >= e.t) continue;
          mine[kind][f] = { value: e.value, t: Math.min(e.t, LOADED - 1), from: e.from };
          if (storedNow(m, kind, f) !== e.value) n += 1;
        }
      }
      localStorage.removeItem(k);
      localStorage.removeItem(BEAT + tab);
    }
    return n;
  }

  function notify(n) {  // "Restored N unsent changes", visible until dismissed
    if (n <= 0) return;
    restoredCount += n;
    let el = document.getElementById("mindeval-restored");
    if (!el) {
      el = document.createElement("div");
      el.id = "mindeval-restored";
      el.setAttribute("role", "status");
      el.style.cssText = "position:fixed;top:0.5rem;left:50%;transform:translateX(-50%);z-index:100000;"
        + "background:#fff4ce;color:#3d2e00;border:1px solid #e0c060;border-radius:6px;padding:0.35rem 0.8rem;"
        + "font-size:0.9rem;cursor:pointer;box-shadow:0 1px 4px rgba(0,0,0,0.2)";
      el.title = "Click to dismiss";
      el.addEventListener("click", () => el.remove());
      document.body.appendChild(el);
    }
    el.setAttribute("data-mindeval-restored", String(restoredCount));
    el.textContent = `Restored ${restoredCount} unsent change${restoredCount === 1 ? "" : "s"} kept in this browser; `
      + "they are being saved (the line under the form says when). Click to dismiss.";
  }

  function keepAfterRefusal(m, mine) {  // carried over from before this load, and its field untouched since
    for (const kind of ["scores", "texts"]) {
      for (const [k, e] of Object.entries(mine[kind])) {
        if (!(e.t < LOADED && "from" in e && storedNow(m, kind, k) === e.from)) delete mine[kind][k];
      }
    }
  }

  function noticeRun() {  // when the server last rendered what is stored (each run renders a new marker)
    const m = marker();
    if (!m) return m;
    const run = Number(m.getAttribute("data-mindeval-run") || 0);
    const sig = `${run}|${m.getAttribute("data-mindeval-saved")}|${m.getAttribute("data-mindeval-texts")}`;
    if (m !== seen.el || sig !== seen.sig) {
      if (run < seen.run) retryNow();  // a new server session (a restart, a reconnect): send again at once
      seen = { el: m, sig, at: now(), run };
    }
    return m;
  }
  new MutationObserver(noticeRun).observe(document.body, { subtree: true, childList: true, attributes: true,
    attributeFilter: ["data-mindeval-run"] });

  function retryNow() {  // the connection is back: every waiting change is due
    const m = marker();
    const o = m && m.getAttribute("data-mindeval-owner");
    if (!o) return;
    const x = load(o);
    for (const kind of ["scores", "texts"]) for (const e of Object.values(x[kind])) { e.next = 0; e.n = 0; }
    save(o, x);
  }
  window.addEventListener("online", retryNow);

  // A change made on this page load was sent by its own click; one carried over is due at once.
  const due = (e) => (e.n || 0) < MAX_TRIES && now() >= (e.next ?? (e.t < LOADED ? 0 : e.t + 1500));
  const tried = (e) => { e.n = (e.n || 0) + 1; e.next = now() + Math.min(1000 * 2 ** (e.n - 1), 15000); };
  let resent = { run: -1, at: 0 };  // the save line's run number when a resend was last pressed
  let busyAt = 0;  // when the page was last seen running a script (mark() looks every 200 ms)
  function rerun() {  // the save line's run stores whatever the form shows and the database lacks
    // A resend that brought no new save line while the page sat idle for 8 s (its fragment
    // unknown to a restarted server) is pressed again as a whole page run. Time spent running
    // does not count: a busy server queues the resend behind a page run (Submit's, say), and a
    // whole page run pressed then would cut that run short.
    const stuck = resent.run === seen.run && now() - Math.max(resent.at, busyAt) > 8000;
    if (resent.run !== seen.run || stuck) resent = { run: seen.run, at: now() };
    const b = document.querySelector(stuck ? ".st-key-rate-retry-page button" : ".st-key-rate-retry button");
    if (b && !b.disabled) b.click();
  }

  function reconcile() {  // drop what is stored; send again what is not
    const m = noticeRun();
    if (!m) return;
    const o = m.getAttribute("data-mindeval-owner");
    if (!o) return;
    const mine = load(o);
    const adopted = adopt(o, mine, m);
    const r = m.getAttribute("data-mindeval-refused");
    if (o in refusals && refusals[o] !== r) keepAfterRefusal(m, mine);  // the server refused a stale write and said so
    refusals[o] = r;
    const scores = storedScores(m);
    const texts = storedTexts(m);
    const moot = attr(m, "data-mindeval-moot", []);
    for (const [k, e] of Object.entries(mine.scores)) {
      if (!(k in scores)) delete mine.scores[k];  // not a field of this form
      else if (scores[k] === e.value && seen.at > e.t) delete mine.scores[k];
      else if (moot.includes(k) && seen.at > e.t) delete mine.scores[k];  // the stored answers no longer reach it
    }
    for (const [f, e] of Object.entries(mine.texts)) {
      if ((texts[f] || "") === e.value && seen.at > e.t) delete mine.texts[f];
    }
    if (!announced.has(o)) {
      announced.add(o);
      const carried = [...Object.entries(mine.scores).filter(([k, e]) => e.t < LOADED && scores[k] !== e.value),
        ...Object.entries(mine.texts).filter(([f, e]) => e.t < LOADED && (texts[f] || "") !== e.value)];
      notify(carried.length);  // changes from before this page load (this tab's own, or adopted just now)
    } else notify(adopted);
    const gs = form(m);
    if (!gs || !idle()) { save(o, mine); return; }
    const subs = subsOf(m);
    let again = false;
    for (const [k, e] of Object.entries(mine.scores)) {
      if (scores[k] === e.value || !due(e) || !subs.includes(k)) continue;  // a field not on screen waits
      const g = gs[subs.indexOf(k)];
      tried(e);
      if (labelOf(g) === e.value) { again = true; continue; }  // shown, not stored: store it again
      if (isBox(g)) {  // a flag: its input takes the click (its label's does not, for a script)
        const box = g.querySelector("input");
        if (box && !box.disabled) box.click();
        continue;
      }
      const label = [...g.querySelectorAll('[role="radiogroup"] label')].find((l) => l.innerText.trim() === e.value);
      const input = label && label.querySelector("input");
      if (input && !input.disabled) label.click();
    }
    for (const [f, e] of Object.entries(mine.texts)) {
      if ((texts[f] || "") === e.value || !due(e)) continue;
      const b = box(f);
      if (!b || b.disabled) continue;
      tried(e);
      if (b.value === e.value) { if (document.activeElement !== b) again = true; continue; }
      if (document.activeElement === b) continue;  // the annotator is typing here
      const set = Object.getOwnPropertyDescriptor(HTMLTextAreaElement.prototype, "value").set;
      b.focus();
      set.call(b, e.value);
      b.dispatchEvent(new Event("input", { bubbles: true }));
      b.blur();  // Streamlit commits a text box when it loses focus
    }
    save(o, mine);
    if (again) rerun();
  }

  function keepEarly(m) {  // the scores clicked before this page load's first marker, under it
    while (m && early.length) {
      const { keys, value } = early.shift();
      const sub = subOfKeys(m, keys);
      if (sub) remember("scores", sub, value, m);
    }
  }

  function mark() {
    beat();
    if (!idle()) busyAt = now();
    const m = marker();
    keepEarly(m);
    const o = m && m.getAttribute("data-mindeval-owner");
    if (o !== owner) { owner = o; focus = -1; }
    reconcile();
    const gs = form(m);
    if (!gs) return null;
    status(m, gs);
    const mode = modeOf(m);
    if (mode === "reply") focus = 0;  // digits pick the reply's level, letters its flags
    else if (mode === "question" && focus >= gs.length && focus > 0) {
      // the next question is on its way (the answer just given decides which); once the stored
      // answers leave nothing to ask, on to the justification
      if (m.getAttribute("data-mindeval-complete") === "1" && m.getAttribute("data-mindeval-state") === "saved"
          && !pendingFocus.done) {
        pendingFocus.done = true;
        const b = box("justification");
        if (b && !isText(document.activeElement)) { b.focus(); b.scrollIntoView({ block: "nearest" }); }
      }
    } else if (focus < 0 || focus >= gs.length) {
      focus = gs.findIndex((g) => !g.querySelector("input:checked"));
      if (focus < 0) focus = 0;
    }
    document.querySelectorAll(`${PANE} .mindeval-focus`).forEach((g) => { if (g !== gs[focus]) g.classList.remove("mindeval-focus"); });
    if (gs[focus]) gs[focus].classList.add("mindeval-focus");
    return gs;
  }
  function status(m, gs) {
    const saved = attr(m, "data-mindeval-saved", []);
    const texts = storedTexts(m);
    const shown = gs.map(labelOf);
    const same = shown.length === saved.length && shown.every((x, k) => x === saved[k]);
    const typed = FIELDS.some((f) => { const b = box(f); return b && b.value !== (texts[f] || ""); });
    const text = !same ? "… Not saved yet: saving your latest choices"
      : typed ? "… Text not saved yet: saved when you leave the box"
      : m.getAttribute("data-mindeval-text");
    if (m.textContent !== text) m.textContent = text;
    m.setAttribute("data-mindeval-state", same && !typed ? "saved" : "saving");
  }
  function show(gs) {
    if (gs && gs[focus]) gs[focus].scrollIntoView({ block: "nearest" });
  }
  function move(step) {
    const gs = mark();
    if (!gs) return;
    focus = Math.max(0, Math.min(gs.length - 1, focus + step));
    mark();
    show(gs);
  }
  function choose(pick) {  // a 1-based position among the choices other than N/A, or "N/A"
    const gs = mark();
    const m = marker();
    const g = gs && gs[focus];
    if (!g || isBox(g)) return false;  // the form is mid re-render: pick nothing rather than a wrong sub-axis
    const options = [...g.querySelectorAll('[role="radiogroup"] label')];
    const na = (l) => ["N/A", "Not relevant"].includes(l.innerText.trim());
    const label = pick === "N/A" ? options.find(na)
      : options.filter((l) => l.innerText.trim() !== "N/A")[pick - 1];
    const input = label && label.querySelector("input");
    if (!input || input.disabled) return false;
    remember("scores", subsOf(m)[focus], label.innerText.trim());
    label.click();
    input.blur();
    const mode = modeOf(m);
    if (mode === "reply") return true;  // the reply stays on screen: flags next, or → to the next reply
    if (mode === "question") {  // the next question appears once the answer is in (it decides which)
      focus += 1;
      pendingFocus.done = false;
      mark();
      show(mark());
      return true;
    }
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
  function toggleFlag(letter) {  // reply forms: the flag with this letter ([a] Missed risk cue …)
    const gs = mark();
    const m = marker();
    if (!gs || modeOf(m) !== "reply") return false;
    const subs = subsOf(m);
    const i = gs.findIndex((g) => isBox(g) && g.innerText.trim().toLowerCase().startsWith(`[${letter}]`));
    if (i < 0) return false;
    const input = gs[i].querySelector("input");
    if (!input || input.disabled) return false;
    remember("scores", subs[i], input.checked ? "" : "yes");
    input.click();  // a script's click on the label does not reach the box
    input.blur();
    return true;
  }
  function stepReply(step) {  // reply forms: the previous / next reply
    const m = marker();
    if (modeOf(m) !== "reply") return false;
    const b = document.querySelector(step > 0 ? ".st-key-reply-next button" : ".st-key-reply-prev button");
    if (!b || b.disabled) return false;
    b.click();
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
    const g = gs && gs[focus];
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
    const mode = modeOf(marker());
    if (/^[1-9]$/.test(e.key)) done = choose(Number(e.key));
    else if (mode === "reply" && /^[a-z]$/i.test(e.key) && !"jkn".includes(e.key.toLowerCase())) done = toggleFlag(e.key.toLowerCase());
    else if (mode === "reply" && (e.key === "ArrowRight" || e.key === "ArrowLeft")) done = stepReply(e.key === "ArrowRight" ? 1 : -1);
    else if (e.key === "n" || e.key === "N") done = choose("N/A");
    else if (e.key === "ArrowDown" || e.key === "j") { move(1); done = true; }
    else if (e.key === "ArrowUp" || e.key === "k") { move(-1); done = true; }
    if (done) { e.preventDefault(); e.stopPropagation(); }
  }, true);
  document.addEventListener("click", (e) => {  // a flag clicked by mouse: its checkbox sends no change event
    const g = e.isTrusted && e.target.closest && e.target.closest(`${PANE} [data-testid="stCheckbox"]`);
    const input = g && g.querySelector("input");
    const m = g && markerOf(g);
    const sub = m && subOfGroup(m, g);
    if (!sub || !input || input.disabled) return;
    // the input itself has toggled when its own click arrives; a click on its label is read before it toggles
    const on = e.target === input ? input.checked : !input.checked;
    remember("scores", sub, on ? "yes" : "", m);
  }, true);
  document.addEventListener("click", (e) => {
    const g = e.isTrusted && e.target.closest && e.target.closest(`${PANE} [data-testid="stRadio"]`);
    if (!g) return;
    const m = ratingOf(g);
    const sub = m && subOfGroup(m, g);
    const label = e.target.closest('[role="radiogroup"] label');
    const input = label && label.querySelector("input");
    if (!m && !document.querySelector("[data-mindeval-saved]") && label && input && !input.disabled) {
      early.push({ keys: keysOf(g), value: label.innerText.trim() });  // keys read now: the element may be replaced
      return;
    }
    if (!sub) return;  // another transcript's stale form: Streamlit drops its clicks, and so do we
    focus = subsOf(m).indexOf(sub);
    if (label && input && !input.disabled) {
      remember("scores", sub, label.innerText.trim(), m);
      if (modeOf(m) === "question") { focus += 1; pendingFocus.done = false; }  // the keys go on from the next question
    }
    mark();
  }, true);
  document.addEventListener("change", (e) => {  // a flag's checkbox (clicked, or toggled by its letter)
    const t = e.target;
    const g = t && t.type === "checkbox" && t.closest && t.closest(`${PANE} [data-testid="stCheckbox"]`);
    if (!g || !e.isTrusted) return;
    const m = markerOf(g);
    const sub = m && subOfGroup(m, g);
    if (sub) remember("scores", sub, t.checked ? "yes" : "", m);
  }, true);
  document.addEventListener("input", (e) => {
    const t = e.target;
    if (!t || t.tagName !== "TEXTAREA" || !t.closest(PANE)) return;
    const f = FIELDS.find((x) => t.closest(`[class*="_${x}"]`));
    if (f) remember("texts", f, t.value);
  }, true);
  // Streamlit's frontend can break its element tree when a fragment's output arrives for a place a
  // newer page run has removed ("Cannot set a node at a delta path"); the page then stops updating.
  // Reload it (at most once per RECOVER_MS): the changes kept here are sent again after the reload.
  const RECOVER_KEY = "mindeval-rate-recovered";  // sessionStorage: when this tab last reloaded itself
  const RECOVER_MS = 10000;
  let recovering = false;
  window.addEventListener("error", (e) => {
    if (!/Cannot set a node at a delta path|Bad delta path index|cannot be called on an ElementNode/.test(String(e.message || ""))) return;
    if (now() - Number(sessionStorage.getItem(RECOVER_KEY) || 0) < RECOVER_MS) return;
    sessionStorage.setItem(RECOVER_KEY, String(now()));
    recovering = true;  // no "Leave site?" for this reload: nothing kept here is lost by it
    location.reload();
  });
  window.addEventListener("beforeunload", (e) => {
    if (recovering) return;
    const m = marker();
    const o = m && m.getAttribute("data-mindeval-owner");
    if ((o && waiting(load(o))) || (m && m.getAttribute("data-mindeval-state") === "saving")) {
      e.preventDefault();
      e.returnValue = "";  // the browser asks whether to leave; the changes stay kept here meanwhile
    }
  });
  window.addEventListener("pagehide", () => { beat(); sessionStorage.setItem(LEFT_KEY, "1"); });  // a reload takes this id back
  window.addEventListener("pageshow", beat);
  setInterval(mark, 200);
})();
