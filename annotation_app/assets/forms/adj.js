// The Disagreements page's adjudication form (a Streamlit custom component, v2).
//
// The form owns its state: the chosen value of each sub-axis and the justification live here,
// drawn from the data Python sends (the item, its sub-axes and their options, what is stored).
// "Save" sends ONE trigger naming the item this form shows, with the values and text as they
// stand and this tab's (tab, seq): Python stores it on that item, once, whatever item the rest of
// the page shows by then. Everything is built with textContent: no text is ever markup.
const TAB = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 10)}`;
let seq = 0;
const drafts = {};  // item → {values, justification} not saved yet, while this page lives

function el(tag, attrs = {}, text = "") {
  const x = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) x.setAttribute(k, v);
  if (text) x.textContent = text;
  return x;
}

function build(root, data, send) {
  root.replaceChildren();
  root.dataset.item = String(data.item);
  const draft = drafts[data.item] || { values: { ...data.values }, justification: data.justification };
  drafts[data.item] = draft;
  root.append(el("p", { class: "adj-title" }, `Adjudicated rating of ${data.label}`));
  const grid = el("div", { class: "adj-grid" });
  for (const f of data.fields) {
    const id = `adj-${data.item}-${f.id}`;
    const cell = el("div", { class: "adj-cell" });
    cell.append(el("label", { for: id }, f.name));
    const sel = el("select", { id, "data-subaxis": f.id });
    sel.append(el("option", { value: "" }, "—"));
    for (const o of f.options) sel.append(el("option", { value: String(o.value) }, o.label));
    const v = draft.values[f.id];
    sel.value = v === null || v === undefined ? "" : String(v);
    sel.addEventListener("change", () => { draft.values[f.id] = sel.value === "" ? null : Number(sel.value); });
    cell.append(sel);
    grid.append(cell);
  }
  root.append(grid);
  const whyId = `adj-${data.item}-why`;
  root.append(el("label", { for: whyId }, "Justification of the adjudicated rating"));
  const why = el("textarea", { id: whyId, rows: "3" });
  why.value = draft.justification;
  why.addEventListener("input", () => { draft.justification = why.value; });
  root.append(why);
  const row = el("div", { class: "adj-row" });
  const save = el("button", { type: "button", class: "adj-save" }, "Save adjudicated rating");
  const note = el("span", { class: "adj-note", role: "status" });
  save.addEventListener("click", () => send(draft, note));
  row.append(save, note);
  root.append(row);
}

export default function ({ parentElement, data, setTriggerValue }) {
  const root = parentElement.querySelector(".mindeval-adj");
  if (!root || !data) return;
  const send = (draft, note) => {
    seq += 1;
    root.dataset.sent = String(seq);
    note.textContent = "Saving…";
    setTriggerValue("save", { tab: TAB, seq, item: data.item, values: draft.values, justification: draft.justification });
  };
  if (root.dataset.item !== String(data.item)) build(root, data, send);
  const ack = data.ack;  // what Python made of this tab's last save (the page's message names the item too)
  if (ack && ack.tab === TAB && ack.ok) delete drafts[ack.item];
  const note = root.querySelector(".adj-note");
  if (note && ack && ack.tab === TAB && ack.item === data.item && String(ack.seq) === root.dataset.sent) {
    note.textContent = ack.message;
    note.dataset.ok = ack.ok ? "1" : "0";
  }
}
