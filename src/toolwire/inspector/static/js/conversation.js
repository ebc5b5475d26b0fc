// A live stream's request steps (and a stored run's, asked for with `requests=delta`) carry
// only what is new since the previous request: `messages_kept` (how many of that request's
// messages, from the start, this one sends again) and `messages_new` (the messages after
// them). The first request, and one that repeats nothing, carries the whole `messages_sent`.
// `expand` gives every request step back its whole `messages_sent`, as the store and an export
// keep it; each stream or stored run needs its own Conversation (the server starts over).

export class Conversation {
  constructor() {
    this.last = null;  // the messages of the stream's previous request
  }

  // `step` with its whole conversation; any step that is not a request as it is.
  expand(step) {
    if (!step || step.kind !== "request") return step;
    const full = isDelta(step) ? this.rebuilt(step) : step;
    this.last = Array.isArray(full.messages_sent) ? full.messages_sent : null;
    return full;
  }

  // The step with `messages_sent` where the delta was (the keys keep the full form's order);
  // without it when the request it continues never came (the messages are then unknown).
  rebuilt(step) {
    const kept = step.messages_kept;
    const known = this.last !== null && kept >= 0 && kept <= this.last.length;
    const out = {};
    for (const [key, value] of Object.entries(step)) {
      if (key === "messages_kept" && known) {
        out.messages_sent = this.last.slice(0, kept).concat(step.messages_new);
      } else if (key !== "messages_kept" && key !== "messages_new") {
        out[key] = value;
      }
    }
    return out;
  }
}

function isDelta(step) {
  return Number.isInteger(step.messages_kept) && Array.isArray(step.messages_new);
}
