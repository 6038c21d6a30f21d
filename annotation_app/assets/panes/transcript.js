// The transcript pane of the rating page (a Streamlit custom component, v2): one card per turn in
// its own scroll box, as tall as the window leaves room for. Python sends the cards (data.turns:
// {n, role, who, text}; only the search hits while searching), and the turn to show at the top of
// the box (data.jump) or else whether to show its end (data.end: the reply under rating). The box
// scrolls only when what it shows or where it should be changes, never on an unrelated rerun.
// Every text goes on screen through textContent: nothing a model or a file wrote becomes markup.
const MIN_REM = 16;  // the box is never shorter than this
const GAP_PX = 12;  // room left under the box, above the window's bottom edge

const el = (tag, attrs = {}, text = "") => {
  const x = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) x.setAttribute(k, v);
  if (text) x.textContent = text;
  return x;
};

function build(root, data) {
  const box = el("div", { class: "tr-box", tabindex: "0", role: "region", "aria-label": "Transcript" });
  for (const t of data.turns) {
    const card = el("div", { class: "tr-card", "data-turn": String(t.n), "data-role": t.role });
    const head = el("div", { class: "tr-head" });
    head.append(el("span", { class: "tr-who" }, t.who), el("span", { class: "tr-n" }, ` · turn ${t.n}`));
    card.append(head, el("div", { class: "tr-text" }, t.text));
    box.append(card);
  }
  if (!data.turns.length && data.empty) box.append(el("p", { class: "tr-empty" }, data.empty));
  root.replaceChildren(box);
  return box;
}

function fit(box) {  // the box's height: from its top to the window's bottom edge
  const rem = parseFloat(getComputedStyle(document.documentElement).fontSize) || 16;
  const top = box.getBoundingClientRect().top + window.scrollY;
  box.style.height = `${Math.max(MIN_REM * rem, window.innerHeight - top - GAP_PX)}px`;
}

function place(box, data) {  // scroll the box (never the page) to the chosen turn or to its end
  if (data.jump !== null && data.jump !== undefined) {
    const card = box.querySelector(`[data-turn="${Number(data.jump)}"]`);
    if (card) box.scrollTop += card.getBoundingClientRect().top - box.getBoundingClientRect().top - box.clientTop;
  } else if (data.end) {
    box.scrollTop = box.scrollHeight;
  }
  box.dataset.placed = `${data.jump ?? ""}|${data.end ? 1 : 0}`;
}

export default function ({ parentElement, data }) {
  const root = parentElement.querySelector(".mindeval-transcript");
  if (!root || !data) return undefined;
  const cards = JSON.stringify(data.turns);
  let box = root.querySelector(".tr-box");
  const rebuilt = !box || root.dataset.cards !== cards;
  if (rebuilt) {
    box = build(root, data);
    root.dataset.cards = cards;
  }
  const where = `${data.jump ?? ""}|${data.end ? 1 : 0}`;
  requestAnimationFrame(() => {
    fit(box);
    if (rebuilt || box.dataset.placed !== where) place(box, data);
  });
  if (!root.mindevalResize) {  // one listener per pane, whatever the number of renders
    root.mindevalResize = () => { const b = root.querySelector(".tr-box"); if (b) fit(b); };
    window.addEventListener("resize", root.mindevalResize);
  }
  return () => { window.removeEventListener("resize", root.mindevalResize); root.mindevalResize = null; };
}
