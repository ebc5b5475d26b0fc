// Copy buttons. The text goes to the clipboard through navigator.clipboard; where the page may
// not use it (no secure context: served on a non-loopback http address, or the permission
// refused), through a hidden text field selected and copied. Either way the button says
// "Copied" for COPIED_MS and a screen reader hears it; a copy that fails says so at once.
// The text is only ever a field's value or the clipboard's: never markup.

import { alertNow, announce } from "./announce.js";
import { h } from "./dom.js";

const COPIED_MS = 2000;

// A button that copies `text()` (asked for at the click); `what` names it ("Copy the result").
export function copyButton(text, what) {
  const button = h("button", { type: "button", class: "small copy", "aria-label": what,
    "data-testid": "copy" }, "Copy");
  let timer = 0;
  button.addEventListener("click", async () => {
    const copied = await copy(String(text() ?? ""), button);
    if (!copied) {
      alertNow("Copying failed: select the text and copy it with the keyboard.");
      return;
    }
    announce("Copied");
    button.textContent = "Copied";
    clearTimeout(timer);
    timer = setTimeout(() => { button.textContent = "Copy"; }, COPIED_MS);
  });
  return button;
}

async function copy(text, button) {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch {
    // refused: the field below
  }
  return copiedThroughField(text, button);
}

// The older way: a text field holding the text, selected, copied, removed; the focus goes back.
function copiedThroughField(text, button) {
  const field = h("textarea", { class: "visually-hidden", "aria-hidden": "true", tabindex: -1 });
  field.value = text;
  document.body.append(field);
  field.select();
  let done = false;
  try {
    done = document.execCommand("copy");
  } catch {
    done = false;
  }
  field.remove();
  button.focus();
  return done;
}
