// Work that arrives faster than the page draws, applied once per animation frame: a stream's
// lines are queued as they are read and handled together, so a burst of lines costs one
// layout, not one per line. A hidden tab draws no frames: a timer stands in for them there.

const HIDDEN_TAB_MS = 250;

export class FrameQueue {
  // `apply(items)` gets every item queued since the last frame, in order.
  constructor(apply) {
    this.apply = apply;
    this.items = [];
    this.frame = 0;
    this.timer = 0;
  }

  push(item) {
    this.items.push(item);
    if (this.frame || this.timer) return;
    this.frame = requestAnimationFrame(() => this.flush());
    this.timer = setTimeout(() => this.flush(), HIDDEN_TAB_MS);
  }

  // Apply what is queued now (the stream ended, or failed).
  flush() {
    cancelAnimationFrame(this.frame);
    clearTimeout(this.timer);
    this.frame = 0;
    this.timer = 0;
    const items = this.items;
    this.items = [];
    if (items.length) this.apply(items);
  }
}
