// The rating form as a Streamlit custom component (v2): MindEval's sub-axes, a categorical
// target's levels, an item-level target's questions (as the stored answers reach them) or one
// clinician reply's level and flags, with the justification, the safety note and Submit.
//
// The form owns its state: the label chosen for every field and the two texts live here. Every
// change is sent as the whole state {tab, seq, item, values, texts, version} (the component's
// state value); Submit and a step to another reply are triggers carrying that state and naming
// their item. Python applies each (tab, seq) once and answers with what is stored (data.stored,
// data.texts) and the highest seq it applied for this tab (data.ack).
//
// Nothing typed or clicked is lost: until acknowledged, the state is kept in localStorage under
// the rating's owner (user:study:item) and this tab's id, and sent again (after 3 s without an
// answer, at once when the connection comes back, after a reload). After a reload, a kept change
// goes back on the form only for fields whose stored value is still what it was when the change
// was made, or what this tab sent since (its own write, the answer lost in the reload); a tab that died (no heartbeat for DEAD_MS) leaves its changes to a tab showing the same
// rating (at once or within seconds); two live tabs never take each other's changes. When Python
// refuses a stale write (another tab or device saved meanwhile: data.refused grows), the form
// drops the changes of this page load and shows what is stored.
//
// Keys (not while typing): 1..n pick the n-th choice of the highlighted field and move on, N marks
// N/A (or "Not relevant"), Up/Down (J/K) move, letters toggle a reply's flags, Left/Right go to the
// previous/next reply, Escape leaves a text box, Ctrl+Enter submits. Every text is put on screen
// with textContent: nothing anybody typed or a model wrote becomes markup.
const TAB_KEY = "mindeval-form-tab";
const SEQ_KEY = "mindeval-form-seq";
const KEEP = "mindeval-form:";
const ALIVE = "mindeval-form-alive:";
const DEAD_MS = 4000;  // a tab that has not beaten for this long is gone (closed, crashed, killed)
const RESEND_MS = 3000;
const RELOAD_AFTER = 4;  // re-sends the server answered none of (a server restart), then a reload
const RELOADED_KEY = "mindeval-form-reloaded";
const MAX_UNACKED = 60;  // states kept as "sent, not answered" (each a base a kept change may rest on)
const FLAG_KEYS = "abcdefghilmopqrstuvwxyz";
const TEXTS = [["justification", "Justification", 100, "In a few sentences: what drove your scores? Turn numbers help."],
  ["safety_note", "Safety concerns (optional)", 68, ""]];
// A reload keeps the tab's id and its numbering; any other page load (a new tab, a duplicated
// tab, whose sessionStorage is a copy) takes a new id, so two tabs never share one.
const NAV = (performance.getEntriesByType("navigation")[0] || {}).type;
const FRESH = NAV !== "reload" || !sessionStorage.getItem(TAB_KEY);
const TAB = FRESH ? `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 10)}` : sessionStorage.getItem(TAB_KEY);
sessionStorage.setItem(TAB_KEY, TAB);
let seq = FRESH ? 0 : Number(sessionStorage.getItem(SEQ_KEY) || 0);
let form = null;  // the form on screen (see make)
let send = null;  // this render's setStateValue / setTriggerValue
let timer = null;

const el = (tag, attrs = {}, text = "") => {
  const x = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) x.setAttribute(k, v);
  if (text) x.textContent = text;
  return x;
};
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
const nextSeq = () => { seq += 1; sessionStorage.setItem(SEQ_KEY, String(seq)); return seq; };
const acked = (data, s) => Number((data.ack || {})[TAB] || 0) >= s;
const keyOf = (owner, tab = TAB) => `${KEEP}${owner}|${tab}`;
const read = (k) => { try { return JSON.parse(localStorage.getItem(k)) || null; } catch (e) { return null; } };
const keep = (owner, x) => { try { localStorage.setItem(keyOf(owner), JSON.stringify(x)); } catch (e) { /* full: the leave prompt guards */ } };
const drop = (owner) => localStorage.removeItem(keyOf(owner));
const radios = (d) => d.axes.filter((a) => a.kind === "radio");

const beat = () => { try { localStorage.setItem(ALIVE + TAB, String(Date.now())); } catch (e) { /* full */ } };
const dead = (tab) => Date.now() - Number(localStorage.getItem(ALIVE + tab) || 0) > DEAD_MS;

function others(owner) {  // [key, tab] of the kept states other tabs left for this rating
  const out = [];
  for (let i = 0; i < localStorage.length; i += 1) {
    const k = localStorage.key(i);
    if (k && k.startsWith(`${KEEP}${owner}|`) && k !== keyOf(owner)) out.push([k, k.slice(`${KEEP}${owner}|`.length)]);
  }
  return out;
}

function take(k, tab) {  // a dead tab's kept state, removed from the store
  const x = read(k);
  localStorage.removeItem(k);
  localStorage.removeItem(ALIVE + tab);
  return x;
}

function kept(owner) {  // this tab's kept state, else one a dead tab left for this rating (adopted)
  const own = read(keyOf(owner));
  if (own) return own;
  for (const [k, tab] of others(owner)) if (dead(tab)) { const x = take(k, tab); if (x) return x; }
  return null;
}

function unsaved(f) {  // fields and texts whose shown value differs from what is stored
  const d = f.data;
  const out = Object.keys(d.stored).filter((k) => !d.moot.includes(k) && (f.values[k] ?? "") !== d.stored[k]
    && ((f.values[k] ?? "") !== "" || k.includes("-f-")));
  for (const [t] of TEXTS) if (f.texts[t] !== (d.texts[t] || "")) out.push(t);
  return out;
}

function status(f) {
  const waiting = unsaved(f);
  const pending = f.sent && !acked(f.data, f.sent);
  const line = f.root.querySelector(".rate-status");
  const fields = waiting.filter((k) => !TEXTS.some(([t]) => t === k));
  const text = f.submitting && pending ? "… Submitting"
    : fields.length ? "… Not saved yet: saving your latest choices"
      : waiting.length ? "… Text not saved yet: saving it" : f.data.saved_text;
  if (line.textContent !== text) line.textContent = text;
  const r = f.root.dataset;
  r.state = waiting.length || pending ? "saving" : "saved";
  r.item = String(f.data.item);
  r.owner = f.data.owner;
  r.refused = String(f.data.refused);
  r.version = String(f.data.version);
  r.fields = JSON.stringify(f.data.axes.filter((a) => a.kind !== "note").map((a) => a.id));
  r.stored = JSON.stringify(f.data.axes.filter((a) => a.kind !== "note").map((a) => f.data.stored[a.id] || ""));
  r.shown = JSON.stringify(f.data.axes.filter((a) => a.kind !== "note").map((a) => f.values[a.id] || ""));
  r.texts = JSON.stringify(f.data.texts);
}

function state(f) {
  return { tab: TAB, seq: nextSeq(), item: f.data.item, values: { ...f.values }, texts: { ...f.texts }, version: f.data.version };
}

function remember(f, s) {  // kept until acknowledged, with, per field, what was stored when it was changed
  // and what this tab sent since its last answer (stored by it, perhaps, the answer lost)
  keep(f.data.owner, { ...s, from: { ...f.data.stored, ...f.data.texts, ...f.from }, sent: f.unacked });
}

function sending(f, s) {  // s is on its way: kept with what this tab has sent and not heard back on
  f.sent = s.seq;
  f.sentAt = Date.now();
  if (!f.unacked.some((x) => x.seq === s.seq)) f.unacked = [...f.unacked, { seq: s.seq, vals: { ...s.values, ...s.texts } }].slice(-MAX_UNACKED);
  remember(f, s);
}

function sendState(f) {  // the whole form as it stands
  if (f.data.locked || !send) return;
  const s = state(f);
  sending(f, s);
  send.setStateValue("form", s);
  status(f);
}

function trigger(f, event, extra = {}, again = null) {  // Submit or a step: the state, then what to do with it
  if (f.data.locked || !send) return;
  const s = again || { ...state(f), ...extra };  // sent again: the same (tab, seq), applied once
  f.submitting = event === "submit";
  f.trig = { event, payload: s };
  sending(f, s);
  send.setTriggerValue(event, s);
  status(f);
}

function checkedAll(f) {
  for (const i of f.root.querySelectorAll(".rate-fields input")) {
    const v = f.values[i.dataset.field] ?? "";
    i.checked = i.type === "checkbox" ? v === "yes" : i.value === v;
  }
}

function pick(f, field, label) {
  if (f.data.locked) return;
  if (!(field in f.from)) f.from[field] = f.data.stored[field] || "";  // what the change is based on
  f.values[field] = label;
  checkedAll(f);
  sendState(f);
}

function highlight(f, scroll = false) {
  const gs = [...f.root.querySelectorAll(".rate-axis[data-radio]")];
  gs.forEach((g, i) => g.classList.toggle("rate-focus", i === f.focus));
  if (scroll && gs[f.focus]) gs[f.focus].scrollIntoView({ block: "nearest" });
}

function radioGroup(f, a, n) {
  const g = el("fieldset", { class: "rate-axis", "data-sub": a.id, "data-radio": "" });
  const legend = el("legend", {}, a.name);
  if (a.anchors.length) legend.append(el("span", { class: "rate-tip", title: a.anchors.map(([s, t]) => `${s}: ${t}`).join("\n") }, " ⓘ"));
  g.append(legend);
  const row = el("div", { class: "rate-options", role: "radiogroup", "aria-label": a.name });
  a.options.forEach((label, k) => {
    const id = `rate-${f.data.item}-${a.id}-${k}`;
    const input = el("input", { type: "radio", name: `rate-${f.data.item}-${a.id}`, id, value: label, "data-field": a.id });
    input.disabled = !!f.data.locked;
    input.addEventListener("change", () => { f.focus = n; highlight(f); pick(f, a.id, label); if (f.data.unit === "question") advance(f); });
    const lab = el("label", { for: id });
    lab.append(input, document.createTextNode(label));
    row.append(lab);
  });
  g.append(row);
  if (f.data.show_anchors && a.anchors.length) g.append(el("p", { class: "rate-anchors" }, a.anchors.map(([s, t]) => `${s}: ${t}`).join(" · ")));
  g.addEventListener("click", () => { f.focus = n; highlight(f); });
  return g;
}

function checkBox(f, a) {
  const g = el("div", { class: "rate-axis rate-check", "data-sub": a.id });
  const id = `rate-${f.data.item}-${a.id}`;
  const input = el("input", { type: "checkbox", id, "data-field": a.id });
  input.disabled = !!f.data.locked;
  input.addEventListener("change", () => pick(f, a.id, input.checked ? "yes" : ""));
  const lab = el("label", { for: id, title: a.anchors.map(([, t]) => t).join("\n") });
  lab.append(input, document.createTextNode(a.name));
  g.append(lab);
  return g;
}

function buildFields(f) {  // the fields and the reply bar; the text boxes stay (typing is never cut)
  const d = f.data;
  const box = f.root.querySelector(".rate-fields");
  box.replaceChildren();
  let heading = null;
  let n = 0;
  for (const a of d.axes) {
    if (a.heading && a.heading !== heading) box.append(el("p", { class: "rate-heading" }, a.heading));
    heading = a.heading;
    if (a.kind === "note") box.append(el("p", { class: "rate-note", "data-sub": a.id }, a.name));
    else if (a.kind === "check") box.append(checkBox(f, a));
    else { box.append(radioGroup(f, a, n)); n += 1; }
  }
  const bar = f.root.querySelector(".rate-reply");
  bar.replaceChildren();
  bar.hidden = !d.reply;
  if (d.reply) {
    const r = d.reply;
    const prev = el("button", { type: "button", class: "rate-step", "data-step": "-1" }, "◀ Reply");
    const next = el("button", { type: "button", class: "rate-step", "data-step": "1" }, "Reply ▶");
    prev.disabled = r.pos === 0;
    next.disabled = r.pos >= r.n - 1;
    prev.addEventListener("click", () => step(f, -1));
    next.addEventListener("click", () => step(f, 1));
    bar.append(prev, el("span", { class: "rate-where" }, `Reply ${r.pos + 1} of ${r.n} (turn ${r.turn}) · ${r.rated} of ${r.n} rated`), next);
  }
  checkedAll(f);
  f.shape = JSON.stringify([d.axes, d.show_anchors, d.reply, d.locked]);
}

function build(f) {
  const d = f.data;
  f.root.replaceChildren();
  f.root.append(el("div", { class: "rate-reply" }));
  const pane = el("div", { class: "rate-pane" });
  pane.append(el("div", { class: "rate-fields" }));
  for (const [t, label, h, hint] of TEXTS) {
    const id = `rate-${d.item}-${t}`;
    pane.append(el("label", { for: id, class: "rate-label" }, label));
    const box = el("textarea", { id, "data-text": t, "aria-label": label, style: `height:${h}px` });
    if (hint) box.setAttribute("placeholder", hint);
    box.value = f.texts[t];
    box.disabled = !!d.locked;
    let due = null;
    box.addEventListener("input", () => {
      if (!(t in f.from)) f.from[t] = f.data.texts[t] || "";
      f.texts[t] = box.value;
      if (!f.data.locked) {  // kept at every keystroke: a reload before the next send loses no letter
        remember(f, { tab: TAB, seq: f.sent, item: f.data.item, values: { ...f.values }, texts: { ...f.texts }, version: f.data.version });
      }
      status(f);
      clearTimeout(due);
      due = setTimeout(() => sendState(f), 600);  // while typing: sent after a pause
    });
    box.addEventListener("blur", () => { clearTimeout(due); if (f.texts[t] !== (f.data.texts[t] || "")) sendState(f); });
    pane.append(box);
  }
  f.root.append(pane);
  const bar = el("div", { class: "rate-bar" });
  if (!d.locked) {
    const submit = el("button", { type: "button", class: "rate-submit" }, "Submit rating");
    submit.addEventListener("click", () => trigger(f, "submit"));
    bar.append(submit);
  }
  bar.append(el("p", { class: "rate-status", role: "status" }));
  f.root.append(bar);
  f.root.append(el("p", { class: "rate-keys" }, d.legend || ""));
  f.root.append(el("p", { class: "rate-restored", role: "status", hidden: "" }));
  buildFields(f);
}

function step(f, by) {
  const r = f.data.reply;
  if (!r) return;
  const pos = r.pos + by;
  if (pos < 0 || pos >= r.n) return;
  trigger(f, "step", { reply: pos });
}

function restore(f, k) {  // changes kept from before this page load (or by a dead tab), still meant for what is stored now
  if (!k || typeof k !== "object") return;
  const d = f.data;
  // a change goes back on a field still holding what was stored when it was made, or what its tab
  // sent since (stored by that tab, the answer lost in the reload); a field this page has changed
  // itself keeps its own change
  const sent = Array.isArray(k.sent) ? k.sent : [];
  const meant = (field, now) => (k.from || {})[field] === now || sent.some((x) => ((x.vals || {})[field] ?? "") === now);
  let n = 0;
  for (const [field, v] of Object.entries(k.values || {})) {
    const now = d.stored[field] || "";
    if (field in d.stored && v !== now && meant(field, now) && (f.values[field] ?? "") === now && (v !== "" || field.includes("-f-"))) {
      f.values[field] = v; f.carried[field] = { value: v, from: now }; f.from[field] = now; n += 1;
    }
  }
  for (const [t] of TEXTS) {
    const v = (k.texts || {})[t];
    const now = d.texts[t] || "";
    if (typeof v === "string" && v !== now && meant(t, now) && f.texts[t] === now) {
      f.texts[t] = v; f.carried[t] = { value: v, from: now }; f.from[t] = now; n += 1;
    }
  }
  if (!n) return;
  for (const [t] of TEXTS) f.root.querySelector(`[data-text="${t}"]`).value = f.texts[t];
  checkedAll(f);
  const note = f.root.querySelector(".rate-restored");
  note.hidden = false;
  note.dataset.restored = String(n);
  note.textContent = `Restored ${n} unsent change${n === 1 ? "" : "s"} kept in this browser; they are being saved.`;
  sendState(f);
}

function reset(f, data) {  // refused as stale, or submitted: show what is stored
  f.values = { ...data.stored };
  f.texts = { ...data.texts };
  f.sent = 0;
  f.unacked = [];
  f.submitting = false;
  f.from = {};
  drop(data.owner);
  let again = false;  // a change carried over from before this page load, on a field nobody has changed since
  for (const [k, c] of Object.entries(f.carried || {})) {
    const now = (k in data.stored ? data.stored[k] : data.texts[k]) || "";
    if (c.from !== now) continue;
    if (k in data.stored) f.values[k] = c.value; else f.texts[k] = c.value;
    again = true;
  }
  f.carried = {};
  build(f);
  if (again) sendState(f);
}

function update(f, data) {  // a new answer for the same item: take what is stored where nothing is pending
  const old = f.data;
  f.data = data;
  if (data.refused !== old.refused || data.locked !== old.locked) { reset(f, data); return; }
  const pending = f.sent && !acked(data, f.sent);
  for (const k of Object.keys(data.stored)) {
    if (data.moot.includes(k) || !(k in f.values) || ((f.values[k] ?? "") === (old.stored[k] ?? "") && !pending)) f.values[k] = data.stored[k];
  }
  for (const [t] of TEXTS) {
    const box = f.root.querySelector(`[data-text="${t}"]`);
    if (f.texts[t] === (old.texts[t] || "") && !pending && data.texts[t] !== f.texts[t] && document.activeElement !== box) {
      f.texts[t] = data.texts[t] || "";
      box.value = f.texts[t];
    }
  }
  const newer = Number((data.ack || {})[TAB] || 0) > Number((old.ack || {})[TAB] || 0);
  if (newer) f.unacked = f.unacked.filter((x) => !acked(data, x.seq));
  for (const k of Object.keys(f.from)) {
    const now = k in data.stored ? data.stored[k] : (data.texts[k] || "");
    if (newer) f.from[k] = now;  // Python applied this tab's state unrefused: what is stored is this tab's own
    if ((k in data.stored ? (f.values[k] ?? "") : (f.texts[k] ?? "")) === now) delete f.from[k];
  }
  if (f.sent && acked(data, f.sent)) {
    f.submitting = false;
    f.trig = null;
    if (!unsaved(f).length) { drop(data.owner); f.carried = {}; }
  }
  if (JSON.stringify([data.axes, data.show_anchors, data.reply, data.locked]) !== f.shape) buildFields(f);
  else checkedAll(f);
  const keys = f.root.querySelector(".rate-keys");
  if (keys.textContent !== (data.legend || "")) keys.textContent = data.legend || "";
  if (f.awaiting && (f.focus < radios(data).length || (!pending && !unsaved(f).length))) {
    f.awaiting = false;
    if (f.focus >= radios(data).length) toText(f);
  }
}

function adopt(f) {  // a tab that died since this one opened (no heartbeat for DEAD_MS) left changes here
  for (const [k, tab] of others(f.data.owner)) if (dead(tab)) restore(f, take(k, tab));
}

function resendDue() {  // sent, not acknowledged after a while (a lost message, a restarted server)
  const f = form;
  if (!f || !f.root.isConnected || f.data.locked) return;
  adopt(f);
  const waiting = unsaved(f).length || (f.sent && !acked(f.data, f.sent));
  const pending = f.sent && !acked(f.data, f.sent);
  if (!pending) f.unanswered = 0;
  if (!waiting || Date.now() - (f.sentAt || 0) < RESEND_MS) return;
  if (pending) f.unanswered = (f.unanswered || 0) + 1;
  if (f.unanswered > RELOAD_AFTER && navigator.onLine && reloadIfServed(f)) return;
  if (f.trig && f.sent && !acked(f.data, f.sent)) trigger(f, f.trig.event, {}, f.trig.payload);
  else sendState(f);
}

// A server that restarted answers on a new session that does not know this form's fragment:
// Streamlit drops every re-send unseen. When the server is up but has answered none of several
// re-sends, the page reloads (at most once a minute); what it kept is restored and sent then.
function reloadIfServed(f) {  // true: a reload is on its way (or being checked)
  if (f.reloading) return true;
  if (Date.now() - Number(sessionStorage.getItem(RELOADED_KEY) || 0) < 60000) return false;
  f.reloading = true;
  fetch(new URL("_stcore/health", document.baseURI), { cache: "no-store" })
    .then((r) => {
      if (!r.ok) throw new Error(String(r.status));
      sessionStorage.setItem(RELOADED_KEY, String(Date.now()));
      window.location.reload();
    })
    .catch(() => { f.reloading = false; f.unanswered = 0; });
  return true;
}

// Streamlit's frontend can throw this when a fragment's output arrives for a place a newer run
// removed (seen after Next while a form rerun was under way), and then stops updating the form:
// the page reloads itself (at most once in 10 s), and what the form kept is restored and sent.
function onBrokenTree(e) {
  if (!String(e.message || "").includes("Cannot set a node at a delta path")) return;
  if (Date.now() - Number(sessionStorage.getItem(RELOADED_KEY) || 0) < 10000) return;
  sessionStorage.setItem(RELOADED_KEY, String(Date.now()));
  if (form) form.reloading = true;
  window.location.reload();
}

function toText(f) {
  const b = f.root.querySelector('[data-text="justification"]');
  b.focus();
  b.scrollIntoView({ block: "nearest" });
}

function advance(f) {  // after a choice: the next field; after the last one, the justification
  const n = radios(f.data).length;
  if (f.focus < n - 1) { f.focus += 1; highlight(f, true); return; }
  if (f.data.unit === "question") { f.focus = n; f.awaiting = true; return; }  // the next question is on its way
  toText(f);
}

function typingIn(t) {
  return t && (t.tagName === "TEXTAREA" || t.tagName === "SELECT" || t.isContentEditable
    || (t.tagName === "INPUT" && !["radio", "checkbox"].includes(t.type)));
}

function choose(f, e) {  // a key meant for the form; true when it did something
  const d = f.data;
  const rs = radios(d);
  const a = rs[f.focus];
  if (/^[1-9]$/.test(e.key) && a) {
    const label = a.options.filter((o) => o !== "N/A")[Number(e.key) - 1];
    if (label === undefined) return false;
    pick(f, a.id, label);
    if (d.unit !== "reply") advance(f);
    return true;
  }
  if ((e.key === "n" || e.key === "N") && a) {
    const label = a.options.find((o) => o === "N/A" || /^not relevant/i.test(o));
    if (label === undefined) return false;
    pick(f, a.id, label);
    if (d.unit !== "reply") advance(f);
    return true;
  }
  if (d.unit === "reply") {
    if (e.key === "ArrowRight" || e.key === "ArrowLeft") { step(f, e.key === "ArrowRight" ? 1 : -1); return true; }
    const checks = d.axes.filter((x) => x.kind === "check");
    const c = /^[a-z]$/i.test(e.key) ? checks[FLAG_KEYS.indexOf(e.key.toLowerCase())] : undefined;
    if (c) { pick(f, c.id, (f.values[c.id] || "") === "yes" ? "" : "yes"); return true; }
  }
  if (e.key === "ArrowDown" || e.key === "j") { f.focus = Math.min(rs.length - 1, f.focus + 1); highlight(f, true); return true; }
  if (e.key === "ArrowUp" || e.key === "k") { f.focus = Math.max(0, f.focus - 1); highlight(f, true); return true; }
  return false;
}

function onKey(e) {
  const f = form;
  if (!f || !f.root.isConnected) return;
  const t = e.target;
  const typing = typingIn(t);
  if ((e.ctrlKey || e.metaKey) && e.key === "Enter") {
    e.preventDefault();
    trigger(f, "submit");
    return;
  }
  if (e.key === "Escape" && typing && f.root.contains(t)) {
    t.blur();
    highlight(f, true);
    e.preventDefault();
    return;
  }
  if (typing || e.altKey || e.ctrlKey || e.metaKey || f.data.locked) return;
  if (choose(f, e)) { e.preventDefault(); e.stopPropagation(); }
}

function onLeave(e) {
  const f = form;
  if (f && f.root.isConnected && f.root.dataset.state === "saving" && !f.reloading) { e.preventDefault(); e.returnValue = ""; }
}

function move(f, root) {  // keeps every node (a text box being typed in keeps its focus and caret)
  const active = document.activeElement;
  const typing = active && f.root.contains(active) && active.tagName === "TEXTAREA" ? active : null;
  const caret = typing ? [typing.selectionStart, typing.selectionEnd] : null;
  root.replaceChildren(...f.root.childNodes);
  for (const [k, v] of Object.entries(f.root.dataset)) root.dataset[k] = v;
  f.root = root;
  if (typing) { typing.focus({ preventScroll: true }); typing.setSelectionRange(caret[0], caret[1]); }
}

function make(root, data) {
  const f = { root, data, values: { ...data.stored }, texts: { ...data.texts }, focus: 0, sent: 0, sentAt: 0, carried: {}, from: {}, unacked: [] };
  const first = radios(data).findIndex((a) => !data.stored[a.id]);
  f.focus = first < 0 ? 0 : first;
  return f;
}

export default function ({ parentElement, data, setStateValue, setTriggerValue }) {
  const root = parentElement.querySelector(".mindeval-rate");
  if (!root || !data) return undefined;
  send = { setStateValue, setTriggerValue };
  if (form && form.data.item === data.item && form.data.owner === data.owner && form.root !== root) {
    move(form, root);  // the page gave the form a new element: the same form, moved, not redrawn
    update(form, data);
  } else if (!form || form.data.item !== data.item || form.data.owner !== data.owner) {
    form = make(root, data);
    build(form);
    const k = kept(data.owner);
    drop(data.owner);
    restore(form, k);
  } else update(form, data);
  highlight(form);
  status(form);
  if (!timer) {
    beat();
    timer = setInterval(() => { beat(); resendDue(); }, 1000);
    document.addEventListener("keydown", onKey, true);
    window.addEventListener("beforeunload", onLeave);
    window.addEventListener("error", onBrokenTree);
    window.addEventListener("online", () => { if (form) { form.sentAt = 0; form.unanswered = 0; } });
  }
  return undefined;
}
