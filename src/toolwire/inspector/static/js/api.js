// The API client: the admin token (read once from the URL fragment, kept in sessionStorage,
// then removed from the address bar), JSON calls, and the NDJSON run stream.

const TOKEN_KEY = "toolwire.token";

// Returns { token, problem }: a fragment that holds no usable token is removed all the same
// and named in `problem`; the page starts either way (with a token kept from before, if any).
// The rest of the fragment (a deep link: `run=…&step=…`) stays in the address bar.
export function adoptToken() {
  const match = /(?:^|[#&])token=([^&]*)/.exec(window.location.hash);
  let problem = null;
  if (match) {
    const token = decodeToken(match[1]);
    if (token) sessionStorage.setItem(TOKEN_KEY, token);
    else problem = token === "" ? "the URL's token is empty" : "the URL's token is malformed";
    const rest = window.location.hash.slice(1).split("&")
      .filter((part) => part && !part.startsWith("token=")).join("&");
    history.replaceState(null, "", window.location.pathname + window.location.search
      + (rest ? `#${rest}` : ""));
  }
  return { token: sessionStorage.getItem(TOKEN_KEY), problem };
}

// A token typed or pasted into the page: the token itself, or the URL the server printed.
// Returns true when it was kept (it is checked by the next API call, like any token).
export function setToken(text) {
  const value = String(text ?? "").trim();
  const match = /(?:^|[#&])token=([^&\s]*)/.exec(value);
  const token = match ? decodeToken(match[1]) : value;
  if (!token || /\s/.test(token)) return false;
  sessionStorage.setItem(TOKEN_KEY, token);
  return true;
}

// The token, "" when empty, null when its percent-encoding is broken (e.g. "%E0%A4%A").
function decodeToken(text) {
  try {
    return decodeURIComponent(text).trim();
  } catch {
    return null;
  }
}

// Called once per 401: the token this tab holds is no longer the server's (it restarted).
let onUnauthorized = () => {};
export function whenUnauthorized(handler) {
  onUnauthorized = handler;
}

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

// What a failed call shows: the server's own message, or `fallback` when there is none (the
// server could not be reached, or answered in another shape).
export function errorText(err, fallback) {
  return err instanceof ApiError ? err.message : fallback;
}

function headers(extra = {}) {
  const token = sessionStorage.getItem(TOKEN_KEY) ?? "";
  return { Authorization: `Bearer ${token}`, ...extra };
}

async function failure(response) {
  if (response.status === 401) onUnauthorized();
  let code = "http_error";
  let message = `the server answered ${response.status}`;
  try {
    const body = await response.json();
    if (body && body.error && typeof body.error.message === "string") {
      code = String(body.error.code);
      message = body.error.message;
    }
  } catch {
    // not our error shape; keep the generic message
  }
  return new ApiError(response.status, code, message);
}

export async function call(method, path, body, signal) {
  const init = { method, headers: headers(), signal };
  if (body !== undefined) {
    init.headers = headers({ "Content-Type": "application/json" });
    init.body = JSON.stringify(body);
  }
  const response = await fetch(`/api${path}`, init);
  if (!response.ok) throw await failure(response);
  return response.json();
}

// POST a body to a streaming endpoint. A refusal (an error status) throws ApiError before any
// event; otherwise resolves to the parsed events. Lines that do not parse are skipped.
export async function openStream(path, body, signal) {
  return stream(path, {
    method: "POST",
    headers: headers({ "Content-Type": "application/json", Accept: "application/x-ndjson" }),
    body: JSON.stringify(body),
    signal,
  });
}

// GET a stored run's live stream (a run executing elsewhere: a queue worker, another process).
export async function followStream(path, signal) {
  return stream(path, { headers: headers({ Accept: "application/x-ndjson" }), signal });
}

async function stream(path, init) {
  const response = await fetch(`/api${path}`, init);
  if (!response.ok) throw await failure(response);
  return ndjson(response.body);
}

async function* ndjson(stream) {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let start = 0;
    let end;
    while ((end = buffer.indexOf("\n", start)) >= 0) {  // a chunk may hold many lines
      const event = parse(buffer.slice(start, end));
      start = end + 1;
      if (event !== undefined) yield event;
    }
    buffer = buffer.slice(start);
  }
  const last = parse(buffer + decoder.decode());
  if (last !== undefined) yield last;
}

function parse(line) {
  const text = line.trim();
  if (!text) return undefined;
  try {
    const event = JSON.parse(text);
    return event && typeof event === "object" ? event : undefined;
  } catch {
    return undefined;
  }
}
