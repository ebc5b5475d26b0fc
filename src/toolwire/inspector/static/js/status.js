// The run statuses the page shows: the server's lifecycle vocabulary (toolwire.lifecycle),
// plus the page's own idle state and the two ways a completed run is told apart.

export const STATUS_TEXT = {
  idle: "Ready",
  queued: "Queued",
  running: "Running",
  completed: "Completed",
  truncated: "Truncated (round cap)",
  cut: "Truncated",
  refused: "Refused",
  blocked: "Blocked",
  dry_run: "Dry run",
  cancelled: "Cancelled",
  awaiting_approval: "Awaiting approval",
  awaiting_input: "Awaiting input",
  failed: "Failed",
  interrupted: "Interrupted",
};

export const WAITING = new Set(["awaiting_approval", "awaiting_input"]);
// A run still going, here or elsewhere (a queue worker): the page can follow it live.
export const LIVE = new Set(["queued", "running"]);

// What a run's status shows as: a completed run that hit the round cap is "truncated", one cut
// otherwise (output cap, context window, budget) is "cut", a refusal or a safety block shows
// as such, a dry run is "dry_run"; anything unknown has failed.
export function shownStatus(run) {
  if (run.status === "completed") {
    const reason = reasonOf(run);
    if (reason === "refused" || reason === "blocked" || reason === "dry_run") return reason;
    if (run.truncated) return reason === "max_iterations" || !reason ? "truncated" : "cut";
    return "completed";
  }
  return typeof run.status === "string" && run.status ? run.status : "failed";
}

// Why the run stopped: the end line's `reason`, or a stored run's `termination_reason`.
export function reasonOf(run) {
  const reason = run && (run.reason ?? run.termination_reason);
  return typeof reason === "string" ? reason : null;
}
