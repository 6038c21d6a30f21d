// Role-play clock: minutes and seconds left, counted in the browser. At zero the chat box
// is disabled at once; a draft the annotator had not sent yet is kept in this tab and shown
// under the clock (the server refuses messages after the deadline and shows them too).
(() => {
  clearInterval(window.__mindevalTimer);
  const clock = document.querySelector("[data-mindeval-left]");
  if (!clock) return;
  const session = clock.getAttribute("data-mindeval-session");
  // Each page run renders the whole seconds left; the clock never gains time back from a later
  // run (a run rendered just before zero once set it from 0:00 back to 0:01 and hid the kept draft)
  const ends = (window.__mindevalEnds = window.__mindevalEnds || {});
  const end = Math.min(ends[session] ?? Infinity, Date.now() + 1000 * Number(clock.getAttribute("data-mindeval-left")));
  ends[session] = end;
  const store = "mindeval-unsent-" + session;
  const tick = () => {
    const el = document.querySelector("[data-mindeval-left]");
    if (!el) { clearInterval(window.__mindevalTimer); return; }
    const left = Math.max(0, Math.ceil((end - Date.now()) / 1000));
    const mm = Math.floor(left / 60), ss = String(left % 60).padStart(2, "0");
    if (left > 0) { el.textContent = `⏱ ${mm}:${ss} left`; return; }
    el.textContent = "⏱ 0:00 — time is up. Please finish the session.";
    const box = document.querySelector('[data-testid="stChatInput"] textarea');
    if (box && !box.disabled) {
      if (box.value.trim()) sessionStorage.setItem(store, box.value);
      box.disabled = true;
      box.placeholder = "Time is up";
    }
    document.querySelectorAll('[data-testid="stChatInputSubmitButton"]').forEach((b) => { b.disabled = true; });
    const kept = sessionStorage.getItem(store);
    const note = document.querySelector("[data-mindeval-unsent]");
    if (kept && note && note.textContent !== kept) {
      note.textContent = kept;
      note.parentElement.style.display = "block";
    }
  };
  tick();
  window.__mindevalTimer = setInterval(tick, 250);
})();
