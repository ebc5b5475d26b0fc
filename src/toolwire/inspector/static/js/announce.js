// What a screen reader hears without moving the focus: two live regions of the page
// (index.html), a polite one for new steps and a run's status, an assertive one for what needs
// the person now (a run waiting for approval or input, an error). Each message is set as the
// region's whole text; the same message twice is said twice (the region is emptied first).

const REPEAT_MS = 50;  // empty, then the text: a changed region is read again

function region(id) {
  return document.getElementById(id);
}

const repeats = new Map();  // region id -> the timer of a repeated message still to be set

function set(id, text) {
  const box = region(id);
  if (!box) return;
  const message = String(text ?? "");
  clearTimeout(repeats.get(id));  // a newer message wins over a repeat not yet set
  repeats.delete(id);
  if (box.textContent === message) {
    box.textContent = "";
    repeats.set(id, setTimeout(() => {
      repeats.delete(id);
      box.textContent = message;
    }, REPEAT_MS));
  } else {
    box.textContent = message;
  }
}

// New steps, a run's status: said when the reader is idle.
export function announce(text) {
  set("announce-polite", text);
}

// An approval, an input asked for, an error: said at once.
export function alertNow(text) {
  set("announce-assertive", text);
}
