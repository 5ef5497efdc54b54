// tvbo dashboard: the live updates of a session page and of the session list. They come
// from the server's event stream, GET /v1/events?session=<id> (Server-Sent Events: a
// `version` message whenever the session changes, and its events; for the list,
// ?changes=true: a `version` message whenever any session changes), read with fetch so that it carries the key like
// every other request (EventSource sends no headers) and parsed here. While the stream
// is not working (an older server without it, a proxy that cuts it, a silence of 30 s)
// the page polls the session's version every second instead, and tries the stream again
// with back-off, resuming after the last event it saw (Last-Event-ID).
"use strict";

const POLL_MS = 1000;
/// Silence after which the stream is given up (the server sends a keep-alive every 15 s).
const STREAM_SILENCE_MS = 30000;
/// The longest wait between two tries of the stream (the first is the server's `retry:`).
const STREAM_RETRY_MAX_MS = 30000;
/// How long to wait before trying again a server that has no stream (404).
const STREAM_ABSENT_RETRY_MS = 300000;

/// Server-Sent Events as they arrive, by the WHATWG rules: `feed` text; at each blank
/// line ending a message with data, `onMessage({event, data, id})`. Lines end in CRLF, LF
/// or CR; `data:` lines join with "\n"; `:` starts a comment; `id:` and `retry:` are kept.
class SseParser {
  constructor(onMessage) {
    this.onMessage = onMessage;
    this.buffer = "";
    this.data = "";
    this.event = "";
    this.lastEventId = "";
    this.retry = null;
    this.afterCr = false;
  }

  feed(text) {
    if (!text) return;
    // A CR that ended the last piece may be the first half of a CRLF.
    if (this.afterCr && text[0] === "\n") text = text.slice(1);
    this.afterCr = text.endsWith("\r");
    this.buffer += text;
    const ends = /\r\n|\r|\n/g;
    let start = 0, match;
    while ((match = ends.exec(this.buffer))) {
      this.line(this.buffer.slice(start, match.index));
      start = ends.lastIndex;
    }
    this.buffer = this.buffer.slice(start);
  }

  line(line) {
    if (line === "") return this.dispatch();
    if (line[0] === ":") return; // a comment: the keep-alive
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value[0] === " ") value = value.slice(1);
    if (field === "data") this.data += value + "\n";
    else if (field === "event") this.event = value;
    else if (field === "id" && !value.includes("\0")) this.lastEventId = value;
    else if (field === "retry" && /^\d+$/.test(value)) this.retry = Number(value);
  }

  dispatch() {
    const data = this.data, event = this.event || "message";
    this.data = "";
    this.event = "";
    if (data) this.onMessage({ event, data: data.slice(0, -1), id: this.lastEventId });
  }
}

/// The event stream `GET /v1/events?<query>` (`session=<id>`, or `changes=true` for the
/// session list): `on.open()` once bytes arrive on a connection, `on.message(message)`
/// for each message, `on.fail(reason, waitMs)` when a connection fails or ends (it is
/// tried again after waitMs). Resumes after the newest id seen.
class EventStream {
  constructor(query, after, on) {
    this.query = query;
    this.lastEventId = after ? String(after) : "";
    this.on = on;
    this.retryMs = 2000;
    this.failures = 0;
    this.stopped = false;
    this.controller = null;
    this.timer = null;
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    if (this.controller) this.controller.abort();
  }

  async connect() {
    if (this.stopped) return;
    const controller = new AbortController();
    this.controller = controller;
    let silent = false, silence = null, reason = "", absent = false;
    // No byte for this long, headers included: the connection is dead.
    const listen = () => {
      clearTimeout(silence);
      silence = setTimeout(() => { silent = true; controller.abort(); }, STREAM_SILENCE_MS);
    };
    try {
      listen();
      const headers = { accept: "text/event-stream" };
      if (this.lastEventId) headers["last-event-id"] = this.lastEventId;
      const response = await apiResponse("/v1/events?" + this.query, { headers, signal: controller.signal, cache: "no-store" });
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      const parser = new SseParser(message => this.on.message(message));
      let opened = false;
      for (;;) {
        const { value, done } = await reader.read();
        if (done) { reason = "the server ended the stream"; break; }
        listen();
        parser.feed(decoder.decode(value, { stream: true }));
        if (parser.lastEventId) this.lastEventId = parser.lastEventId;
        if (parser.retry !== null) this.retryMs = Math.max(parser.retry, 500);
        if (!opened) { opened = true; this.failures = 0; this.on.open(); }
      }
    } catch (e) {
      if (this.stopped || e.status === 401) return; // stopped, or the sign-in form is shown
      absent = e.status === 404;
      reason = silent ? `no message for ${STREAM_SILENCE_MS / 1000} s` : absent ? "this server has no event stream" : e.message;
    } finally {
      clearTimeout(silence);
    }
    controller.abort();
    if (this.stopped) return;
    this.failures++;
    const wait = absent ? STREAM_ABSENT_RETRY_MS : Math.min(this.retryMs * 2 ** (this.failures - 1), STREAM_RETRY_MAX_MS);
    this.on.fail(reason, wait);
    this.timer = setTimeout(() => this.connect(), wait);
  }
}

/// Keeps a session page up to date: `refresh()` reads the session and draws it again
/// when its version moved (returns whether it did), `version()` is the one drawn. The
/// stream's `version` messages and events drive it; while the stream is down, a poll.
/// The header's `#live` says which (its data-mode: stream, poll or offline).
function watchSession(id, refresh, version) {
  const live = document.getElementById("live");
  let mode = null, stopped = false, pollTimer = null, pollDelay = POLL_MS, hiddenChange = false;
  const show = (next, text, title) => {
    // The page's own clock reads the mode and since when (session.js ages the status).
    if (next !== mode) document.body.dataset.liveSince = String(Date.now());
    document.body.dataset.live = next;
    mode = next;
    live.dataset.mode = next;
    live.className = "live" + (next === "offline" ? "" : " on " + next);
    live.textContent = text;
    live.title = title;
  };
  // One refresh at a time; a change meanwhile refreshes again after it. A refresh in
  // poll mode also reads the events the stream would have brought.
  let running = null, again = false;
  const update = () => {
    if (running) { again = true; return running; }
    running = (async () => {
      try {
        do {
          again = false;
          const moved = await refresh();
          if (moved && mode !== "stream") await loadSessionEvents(id);
        } while (again);
      } finally { running = null; }
    })();
    return running;
  };
  // The poll: one loop at most (a loop started earlier ends at its next turn), which
  // ends when the stream opens.
  let loop = 0;
  const poll = async turn => {
    if (stopped || turn !== loop) return;
    if (!document.hidden) {
      try {
        await update();
        pollDelay = POLL_MS;
        if (mode === "offline") show("poll", "polling", "Reading the session every second: the event stream is down.");
      } catch (e) {
        if (e.status === 401) return;
        pollDelay = Math.min(pollDelay * 2, 30000);
        show("offline", "offline: " + e.message, "The server did not answer; trying again in " + Math.round(pollDelay / 1000) + " s.");
      }
    }
    if (!stopped && turn === loop) pollTimer = setTimeout(() => poll(turn), document.hidden ? 4 * POLL_MS : pollDelay);
  };
  const startPolling = delay => {
    if (pollTimer !== null) return;
    const turn = ++loop;
    pollTimer = setTimeout(() => poll(turn), delay);
  };
  const stopPolling = () => { loop++; clearTimeout(pollTimer); pollTimer = null; };
  const stream = new EventStream("session=" + encodeURIComponent(id), lastEventId(), {
    open: () => {
      show("stream", "live", "Updates stream from the server as they happen (GET /v1/events).");
      stopPolling();
      // The events committed while the stream was down (or before it first opened).
      loadSessionEvents(id).catch(() => {});
    },
    message: message => {
      let body;
      try { body = JSON.parse(message.data); } catch (_) { return; }
      if (message.event === "version") {
        if (body.version === version()) return;
        if (document.hidden) { hiddenChange = true; return; }
        update().catch(() => {});
      } else if (body && body.seq !== undefined && (!body.session || body.session === id)) {
        addSessionEvents([body]);
      }
    },
    fail: (reason, wait) => {
      if (stopped) return;
      show("poll", "polling", `The event stream is not working (${reason}): reading the session every second; the stream is tried again in ${Math.round(wait / 1000)} s.`);
      startPolling(0);
    },
  });
  show("poll", "connecting…", "Opening the server's event stream; meanwhile reading the session every second.");
  startPolling(POLL_MS);
  stream.connect();
  pageStoppers.push(() => { stopped = true; stream.stop(); stopPolling(); });
  document.addEventListener("visibilitychange", () => {
    if (document.hidden || stopped) return;
    if (mode !== "stream" || hiddenChange) { hiddenChange = false; update().catch(() => {}); }
  });
}
