// The rating form (MindEval's sub-axes, or a categorical target's levels) as a Streamlit custom
// component (v2). The form owns its state: the choice of every sub-axis and the two texts live
// here. Every change is sent as the form's whole state {tab, seq, item, values, texts} (a state
// value), Submit as a trigger naming its item; Python applies each (tab, seq) once and says which
// it applied (data.ack), and what is stored (data.stored, data.texts).
//
// Nothing typed or clicked is lost: until Python has acknowledged it, the state is kept in
// localStorage under the rating's owner (user:study:item) and sent again (after a reload, a
// reconnect, or every few seconds while unacknowledged); a change kept from before a reload is
// sent again only for fields whose stored value is still what it was when the change was made.
// When Python refuses a stale write (another tab or device saved meanwhile: data.refused grows),
// the form drops its changes and shows what is stored.
//
// Keys (not while typing): 1..n pick the n-th choice of the highlighted sub-axis and move on, N
// marks N/A, Up/Down (J/K) move, Escape leaves a text box, Ctrl+Enter submits. Every text is put
// on screen with textContent: nothing becomes markup.
const TAB_KEY = "mindeval-form-tab";
const SEQ_KEY = "mindeval-form-seq";
const KEEP = "mindeval-form:";
const TEXTS = [["justification", "Justification", 100, "In a few sentences: what drove your scores? Turn numbers help."],
  ["safety_note", "Safety concerns (optional)", 68, ""]];
const TAB = sessionStorage.getItem(TAB_KEY) || `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 10)}`;
sessionStorage.setItem(TAB_KEY, TAB);
let seq = Number(sessionStorage.getItem(SEQ_KEY) || 0);
let form = null;  // the form on screen: {root, data, values, texts, focus, sent, sentAt, refused}
let send = null;  // this render's setStateValue / setTriggerValue
let timer = null;

const el = (tag, attrs = {}, text = "") => {
  const x = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) x.setAttribute(k, v);
  if (text) x.textContent = text;
  return x;
};
const load = (owner) => { try { return JSON.parse(localStorage.getItem(KEEP + owner)) || null; } catch (e) { return null; } };
const keep = (owner, x) => { try { localStorage.setItem(KEEP + owner, JSON.stringify(x)); } catch (e) { /* full: the leave prompt guards */ } };
const nextSeq = () => { seq += 1; sessionStorage.setItem(SEQ_KEY, String(seq)); return seq; };
const acked = (data, s) => Number((data.ack || {})[TAB] || 0) >= s;
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

function unsaved(f) {  // fields whose shown choice or text differs from what is stored
  const d = f.data;
  const out = Object.keys(f.values).filter((k) => f.values[k] !== (d.stored[k] || ""));
  for (const [t] of TEXTS) if (f.texts[t] !== (d.texts[t] || "")) out.push(t);
  return out;
}

function status(f) {
  const waiting = unsaved(f);
  const line = f.root.querySelector(".rate-status");
  const scores = waiting.filter((k) => !TEXTS.some(([t]) => t === k));
  const text = scores.length ? "… Not saved yet: saving your latest choices"
    : waiting.length ? "… Text not saved yet: saving it" : f.data.saved_text;
  if (line.textContent !== text) line.textContent = text;
  f.root.dataset.state = waiting.length || (f.sent && !acked(f.data, f.sent)) ? "saving" : "saved";
  f.root.dataset.item = String(f.data.item);
  f.root.dataset.owner = f.data.owner;
  f.root.dataset.refused = String(f.data.refused);
  f.root.dataset.stored = JSON.stringify(f.data.axes.map((a) => f.data.stored[a.id] || ""));
  f.root.dataset.shown = JSON.stringify(f.data.axes.map((a) => f.values[a.id] || ""));
  f.root.dataset.texts = JSON.stringify(f.data.texts);
}

function sendState(f) {  // the whole form as it stands, kept until acknowledged
  if (f.data.locked || !send) return;
  const s = nextSeq();
  const state = { tab: TAB, seq: s, item: f.data.item, values: { ...f.values }, texts: { ...f.texts } };
  f.sent = s;
  f.sentAt = Date.now();
  const kept = load(f.data.owner);
  const from = (kept && kept.from) || { ...f.data.stored, ...f.data.texts };
  keep(f.data.owner, { ...state, from, t: Date.now() });
  send.setStateValue("form", state);
  status(f);
}

function pick(f, sub, label) {
  if (f.data.locked) return;
  f.values[sub] = label;
  const g = f.root.querySelector(`[data-sub="${CSS.escape(sub)}"]`);
  for (const i of g.querySelectorAll("input")) i.checked = i.value === label;
  sendState(f);
}

function highlight(f, scroll = false) {
  const gs = [...f.root.querySelectorAll(".rate-axis")];
  gs.forEach((g, i) => g.classList.toggle("rate-focus", i === f.focus));
  if (scroll && gs[f.focus]) gs[f.focus].scrollIntoView({ block: "nearest" });
}

function axisGroup(f, a, n) {
  const g = el("fieldset", { class: "rate-axis", "data-sub": a.id });
  const legend = el("legend", {}, a.name);
  if (a.anchors.length) {
    const tip = el("span", { class: "rate-tip", title: a.anchors.map(([s, t]) => `${s}: ${t}`).join("\n") }, " ⓘ");
    legend.append(tip);
  }
  g.append(legend);
  const row = el("div", { class: "rate-options", role: "radiogroup", "aria-label": a.name });
  for (const label of a.options) {
    const id = `rate-${f.data.item}-${a.id}-${label}`;
    const input = el("input", { type: "radio", name: `rate-${f.data.item}-${a.id}`, id, value: label });
    input.checked = f.values[a.id] === label;
    input.disabled = !!f.data.locked;
    input.addEventListener("change", () => { f.focus = n; highlight(f); pick(f, a.id, label); });
    const lab = el("label", { for: id });
    lab.append(input, document.createTextNode(label));
    row.append(lab);
  }
  g.append(row);
  if (f.data.show_anchors && a.anchors.length) {
    g.append(el("p", { class: "rate-anchors" }, a.anchors.map(([s, t]) => `${s}: ${t}`).join(" · ")));
  }
  g.addEventListener("click", () => { f.focus = n; highlight(f); });
  return g;
}

function build(f) {
  const d = f.data;
  f.root.replaceChildren();
  const pane = el("div", { class: "rate-pane" });
  let heading = null;
  d.axes.forEach((a, n) => {
    if (a.heading && a.heading !== heading) pane.append(el("p", { class: "rate-heading" }, a.heading));
    heading = a.heading;
    pane.append(axisGroup(f, a, n));
  });
  for (const [t, label, h, hint] of TEXTS) {
    const id = `rate-${d.item}-${t}`;
    pane.append(el("label", { for: id, class: "rate-label" }, label));
    const box = el("textarea", { id, "data-text": t, "aria-label": label, style: `height:${h}px` });
    if (hint) box.setAttribute("placeholder", hint);
    box.value = f.texts[t];
    box.disabled = !!d.locked;
    let due = null;
    box.addEventListener("input", () => {
      f.texts[t] = box.value;
      status(f);
      clearTimeout(due);
      due = setTimeout(() => sendState(f), 700);  // while typing: sent after a pause
    });
    box.addEventListener("blur", () => { clearTimeout(due); if (f.texts[t] !== (f.data.texts[t] || "")) sendState(f); });
    pane.append(box);
  }
  f.root.append(pane);
  const bar = el("div", { class: "rate-bar" });
  if (!d.locked) {
    const submit = el("button", { type: "button", class: "rate-submit" }, "Submit rating");
    submit.addEventListener("click", () => submitNow(f));
    bar.append(submit);
  }
  bar.append(el("p", { class: "rate-status", role: "status" }));
  f.root.append(bar);
  const restored = el("p", { class: "rate-restored", role: "status", hidden: "" });
  f.root.append(restored);
}

function submitNow(f) {
  if (f.data.locked || !send) return;
  const s = nextSeq();
  f.sent = s;
  f.sentAt = Date.now();
  send.setTriggerValue("submit", { tab: TAB, seq: s, item: f.data.item, values: { ...f.values }, texts: { ...f.texts } });
}

function restore(f) {  // changes kept from before this page load, still meant for what is stored now
  const kept = load(f.data.owner);
  if (!kept) return;
  const stored = { ...f.data.stored, ...f.data.texts };
  let n = 0;
  for (const [k, v] of Object.entries(kept.values || {})) {
    if (k in f.values && v !== (f.data.stored[k] || "") && (kept.from || {})[k] === (f.data.stored[k] || "")) { f.values[k] = v; n += 1; }
  }
  for (const [t] of TEXTS) {
    const v = (kept.texts || {})[t];
    if (typeof v === "string" && v !== (f.data.texts[t] || "") && (kept.from || {})[t] === (stored[t] || "")) { f.texts[t] = v; n += 1; }
  }
  localStorage.removeItem(KEEP + f.data.owner);
  f.carried = {};  // what was restored, and what was stored when it was made (kept through a refusal)
  for (const k of [...Object.keys(f.values), ...TEXTS.map(([t]) => t)]) {
    const v = k in f.values ? f.values[k] : f.texts[k];
    if (v !== ((k in f.values ? f.data.stored[k] : f.data.texts[k]) || "")) f.carried[k] = { value: v, from: (kept.from || {})[k] };
  }
  if (!n) return;
  build(f);
  const note = f.root.querySelector(".rate-restored");
  note.hidden = false;
  note.dataset.restored = String(n);
  note.textContent = `Restored ${n} unsent change${n === 1 ? "" : "s"} kept in this browser; they are being saved.`;
  sendState(f);
}

function update(f, data) {  // a new render of the same item: take what is stored where nothing is pending
  const old = f.data;
  f.data = data;
  if (data.refused !== old.refused || data.locked !== old.locked) {  // refused as stale, or submitted
    f.values = { ...data.stored };
    f.texts = { ...data.texts };
    f.sent = 0;
    localStorage.removeItem(KEEP + data.owner);
    let again = false;  // a change carried over from before this page load, on a field nobody has changed since
    for (const [k, c] of Object.entries(f.carried || {})) {
      const now = (k in f.values ? data.stored[k] : data.texts[k]) || "";
      if (c.from !== now) continue;
      if (k in f.values) f.values[k] = c.value; else f.texts[k] = c.value;
      again = true;
    }
    f.carried = {};
    build(f);
    if (again) sendState(f);
    return;
  }
  for (const a of data.axes) {
    if (f.values[a.id] === (old.stored[a.id] || "") && !(f.sent && !acked(data, f.sent))) f.values[a.id] = data.stored[a.id] || "";
  }
  if (f.sent && acked(data, f.sent) && !unsaved(f).length) { localStorage.removeItem(KEEP + data.owner); f.carried = {}; }
  if (data.show_anchors !== old.show_anchors || !same(data.axes, old.axes)) build(f);
  else for (const a of data.axes) {
    for (const i of f.root.querySelectorAll(`[data-sub="${CSS.escape(a.id)}"] input`)) i.checked = i.value === f.values[a.id];
  }
}

function resendDue() {  // sent, not acknowledged after a while (a lost message, a restarted server)
  const f = form;
  if (!f || !f.root.isConnected || f.data.locked) return;
  const waiting = unsaved(f).length || (f.sent && !acked(f.data, f.sent));
  if (waiting && Date.now() - (f.sentAt || 0) > 3000) sendState(f);
}

function advance(f) {  // after a choice by key: the next sub-axis, after the last one the justification
  if (f.focus < f.data.axes.length - 1) { f.focus += 1; highlight(f, true); return; }
  const b = f.root.querySelector('[data-text="justification"]');
  b.focus();
  b.scrollIntoView({ block: "nearest" });
}

function onKey(e) {
  const f = form;
  if (!f || !f.root.isConnected) return;
  const t = e.target;
  const typing = t && (t.tagName === "TEXTAREA" || t.tagName === "SELECT" || t.isContentEditable
    || (t.tagName === "INPUT" && !["radio", "checkbox"].includes(t.type)));
  if ((e.ctrlKey || e.metaKey) && e.key === "Enter") {
    e.preventDefault();
    submitNow(f);
    return;
  }
  if (e.key === "Escape" && typing && f.root.contains(t)) {
    t.blur();
    highlight(f, true);
    e.preventDefault();
    return;
  }
  if (typing || e.altKey || e.ctrlKey || e.metaKey || f.data.locked) return;
  const axes = f.data.axes;
  const a = axes[f.focus];
  let done = true;
  if (/^[1-9]$/.test(e.key) && a) {
    const label = a.options.filter((o) => o !== "N/A")[Number(e.key) - 1];
    if (label === undefined) return;
    pick(f, a.id, label);
    advance(f);
  } else if ((e.key === "n" || e.key === "N") && a && a.options.includes("N/A")) {
    pick(f, a.id, "N/A");
    advance(f);
  } else if (e.key === "ArrowDown" || e.key === "j") { f.focus = Math.min(axes.length - 1, f.focus + 1); highlight(f, true); }
  else if (e.key === "ArrowUp" || e.key === "k") { f.focus = Math.max(0, f.focus - 1); highlight(f, true); }
  else done = false;
  if (done) { e.preventDefault(); e.stopPropagation(); }
}

function onLeave(e) {
  const f = form;
  if (f && f.root.isConnected && f.root.dataset.state === "saving") { e.preventDefault(); e.returnValue = ""; }
}

export default function ({ parentElement, data, setStateValue, setTriggerValue }) {
  const root = parentElement.querySelector(".mindeval-rate");
  if (!root || !data) return undefined;
  send = { setStateValue, setTriggerValue };
  if (!form || form.root !== root || form.data.item !== data.item) {
    form = { root, data, values: { ...data.stored }, texts: { ...data.texts }, focus: 0, sent: 0, sentAt: 0 };
    const first = data.axes.findIndex((a) => !data.stored[a.id]);
    form.focus = first < 0 ? 0 : first;
    build(form);
    restore(form);
  } else update(form, data);
  highlight(form);
  status(form);
  if (!timer) {
    timer = setInterval(resendDue, 1000);
    document.addEventListener("keydown", onKey, true);
    window.addEventListener("beforeunload", onLeave);
    window.addEventListener("online", () => { if (form) form.sentAt = 0; });
  }
  return undefined;
}
