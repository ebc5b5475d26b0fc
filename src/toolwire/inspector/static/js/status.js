// The run statuses the page shows: the server's lifecycle vocabulary (toolwire.lifecycle),
// plus the page's own idle state and the two ways a completed run is told apart.

export const STATUS_TEXT = {
  idle: "Ready",
  running: "Running",
  completed: "Completed",
  truncated: "Truncated (round cap)",
  dry_run: "Dry run",
  cancelled: "Cancelled",
  awaiting_approval: "Awaiting approval",
  awaiting_input: "Awaiting input",
  failed: "Failed",
  interrupted: "Interrupted",
};

export const WAITING = new Set(["awaiting_approval", "awaiting_input"]);

// What a run's status shows as: a completed run that hit the round cap is "truncated", a dry
// run is "dry_run"; anything unknown has failed.
export function shownStatus(run) {
  if (run.status === "completed") {
    if (run.truncated) return "truncated";
    return run.reason === "dry_run" || run.termination_reason === "dry_run" ? "dry_run" : "completed";
  }
  return typeof run.status === "string" && run.status ? run.status : "failed";
}
