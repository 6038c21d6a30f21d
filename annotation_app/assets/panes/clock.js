// The role-play clock (a Streamlit custom component, v2): minutes and seconds left, counted in the
// browser from what Python sends (data.left, seconds, rounded up: the browser's zero never comes
// before the server's deadline). At zero it sends the trigger "zero" (again every few seconds while
// Python has not yet answered data.up = true): the page reruns and shows the chat box disabled, and
// the server refuses any message after the deadline. A later render never winds the clock back (a
// run rendered just before zero once set it from 0:00 back to 0:01).
const ends = {};  // session → the time (ms) its clock reaches zero, for as long as this page lives
const RESEND_MS = 3000;

function show(root) {
  const { data, setTriggerValue } = root.mindevalClock;
  const session = String(data.session);
  const left = Math.max(0, Math.ceil((ends[session] - Date.now()) / 1000));
  const time = root.querySelector(".clock-time");
  root.dataset.left = String(left);
  if (left > 0) {
    const mm = Math.floor(left / 60), ss = String(left % 60).padStart(2, "0");
    time.textContent = `⏱ ${mm}:${ss} left`;
    return;
  }
  time.textContent = "⏱ 0:00 — time is up. Please finish the session.";
  if (data.up) return;
  const last = Number(root.dataset.sentAt || 0);
  if (Date.now() - last >= RESEND_MS) {
    root.dataset.sentAt = String(Date.now());
    setTriggerValue("zero", data.session);
  }
}

export default function ({ parentElement, data, setTriggerValue }) {
  const root = parentElement.querySelector(".mindeval-clock");
  if (!root || !data) return undefined;
  const session = String(data.session);
  ends[session] = Math.min(ends[session] ?? Infinity, Date.now() + 1000 * Math.ceil(Number(data.left)));
  if (!root.querySelector(".clock-time")) {
    const p = document.createElement("p");
    p.className = "clock-time";
    root.replaceChildren(p);
  }
  if (root.dataset.session !== session) delete root.dataset.sentAt;
  root.dataset.session = session;
  root.dataset.render = String(data.render);  // a new page run (tests wait on it)
  root.dataset.up = data.up ? "1" : "0";
  root.mindevalClock = { data, setTriggerValue };
  show(root);
  if (!root.mindevalTick) root.mindevalTick = setInterval(() => show(root), 250);
  return () => { clearInterval(root.mindevalTick); root.mindevalTick = null; };
}
