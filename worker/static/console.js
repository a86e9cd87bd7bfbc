// The operator console's script (console.html; served under the page's CSP: no inline script or
// style, so every look is a class of console.css). Views: the sessions list (filters, pages,
// bulk stop), the inbox (live over `/pending/stream`, a form per waiting call) and one session (its conversation, a
// checkpoint timeline to fork or rewind from, the live stream, its tree and usage).
"use strict";
const main = document.getElementById("main");
const KEY = "batonOperatorKey";
const TEMPORAL_UI = document.querySelector('meta[name="baton-temporal-ui"]').content;
// How often the sessions list and a session page read again (the inbox is pushed).
const REFRESH_MS = 2000;
let timer = null;
let follow = null;

function key() { return sessionStorage.getItem(KEY); }

function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) node[name] = value;
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child !== undefined && child !== null && child !== false) {
      node.append(child instanceof Node ? child : String(child));
    }
  }
  return node;
}

async function api(method, path, body) {
  const response = await fetch(path, {
    method,
    headers: Object.assign({ authorization: `Bearer ${key()}` },
      body === undefined ? {} : { "content-type": "application/json" }),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const answer = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(`${answer.code || response.status}: ${answer.error || ""}`);
  return answer;
}

function signIn() {
  main.replaceChildren(el("form", { "data-testid": "sign-in", onsubmit: (event) => {
    event.preventDefault();
    sessionStorage.setItem(KEY, event.target.key.value);
    route();
  } }, el("label", {}, "Operator key ", el("input", { name: "key", type: "password", "data-testid": "key" })),
     " ", el("button", { type: "submit", "data-testid": "sign-in-button" }, "Sign in")));
}

// Times in the operator's own zone, named.
function when(ms) {
  if (!ms) return "";
  return new Date(ms).toLocaleString(undefined, { year: "numeric", month: "short", day: "numeric",
    hour: "2-digit", minute: "2-digit", second: "2-digit", timeZoneName: "short" });
}

function span(ms) {
  const seconds = Math.round(Math.abs(ms) / 1000);
  if (seconds < 60) return `${seconds} s`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min`;
  if (seconds < 86400) return `${Math.round(seconds / 3600)} h`;
  return `${Math.round(seconds / 86400)} d`;
}

function ago(ms) { return ms ? `${span(Date.now() - ms)} ago` : ""; }

function timeAt(ms) { return el("time", { datetime: new Date(ms).toISOString(), title: when(ms) }, when(ms)); }

// A button that asks once more before it acts: the first click shows "Confirm" and "Cancel".
function confirmed(label, testid, question, action) {
  const holder = el("span", { class: "confirm" });
  const ask = () => holder.replaceChildren(`${question} `,
    el("button", { class: "danger", "data-testid": `${testid}-confirm`, onclick: () => {
      holder.replaceChildren(start); action(); } }, `Yes, ${label.toLowerCase()}`), " ",
    el("button", { onclick: () => holder.replaceChildren(start) }, "Cancel"));
  const start = el("button", { "data-testid": testid, onclick: ask }, label);
  holder.append(start);
  return holder;
}

// The filters of the sessions list and the inbox. The view's query is the API's, but for three
// fields typed as people type them: `meta` (key=value), `after` and `before` (local times).
function filtersForm(params, onchange) {
  const field = (name, label, attributes = {}) => el("label", {}, label, " ",
    el("input", Object.assign({ name, value: params.get(name) || "", "data-testid": `filter-${name}`,
      size: 14 }, attributes)));
  const statuses = ["", "active", "suspended_client_tool", "completed", "failed", "interrupted"];
  const status = el("select", { name: "status", "data-testid": "filter-status" },
    ...statuses.map((value) => el("option", { value, selected: params.get("status") === value },
      value || "any status")));
  const form = el("form", { class: "filters", onsubmit: (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    for (const [name, value] of new FormData(event.target)) if (value) next.append(name, value);
    onchange(next);
  } }, status, field("agent", "agent"), field("userId", "user"), field("tag", "tag"),
     field("meta", "metadata", { placeholder: "key=value" }),
     field("after", "after", { type: "datetime-local" }),
     field("before", "before", { type: "datetime-local" }),
     el("label", {}, el("input", { type: "checkbox", name: "awaiting", value: "person",
       checked: Boolean(params.get("awaiting")) }), " waiting on a person"),
     el("button", { type: "submit" }, "Filter"));
  return form;
}

// The API's query for a view's: `meta`, `after`, `before` turned into `metadata.<key>`,
// `updatedAfter`, `updatedBefore`; `cursor` kept.
function apiQuery(params) {
  const query = new URLSearchParams();
  for (const [name, value] of params) {
    if (name === "meta") {
      const cut = value.indexOf("=");
      if (cut > 0) query.append(`metadata.${value.slice(0, cut).trim()}`, value.slice(cut + 1).trim());
    } else if (name === "after" || name === "before") {
      const ms = new Date(value).getTime();
      if (!Number.isNaN(ms)) query.append(name === "after" ? "updatedAfter" : "updatedBefore", String(ms));
    } else query.append(name, value);
  }
  return query;
}

// "Next page" (and back to the first) from a page's `nextCursor`.
function pager(view, params, nextCursor) {
  const to = (cursor) => {
    const next = new URLSearchParams(params);
    next.delete("cursor");
    if (cursor) next.set("cursor", cursor);
    location.hash = `#/${view}?${next}`;
  };
  return el("div", { class: "pager" },
    params.get("cursor") ? el("button", { "data-testid": "first-page", onclick: () => to(null) }, "First page") : "",
    " ",
    nextCursor ? el("button", { "data-testid": "next-page", onclick: () => to(nextCursor) }, "Next page") : "");
}

async function sessionsView(params) {
  const body = el("tbody");
  const pages = el("div");
  const selected = new Set();
  const bulk = el("div", { class: "bulk" });
  const stopSelected = async (kind) => {
    const ids = [...selected];
    const failed = [];
    for (const sessionId of ids) {
      await api("POST", `/${kind}`, { sessionId }).catch((error) => failed.push(`${sessionId}: ${error.message}`));
    }
    selected.clear();
    if (failed.length) showError(new Error(`not stopped: ${failed.join("; ")}`));
    await refresh();
  };
  const drawBulk = () => bulk.replaceChildren(selected.size
    ? [`${selected.size} selected `, confirmed("Interrupt", "bulk-interrupt",
        `Interrupt ${selected.size} session(s)?`, () => stopSelected("interrupt").catch(showError))]
    : []);
  main.replaceChildren(filtersForm(params, (next) => { location.hash = `#/sessions?${next}`; }), bulk,
    el("table", { "data-testid": "sessions" }, el("thead", {}, el("tr", {},
      ...["", "session", "agent", "status", "user", "tags", "pending", "steps", "updated"].map((h) => el("th", {}, h)))), body),
    pages);
  const refresh = async () => {
    const page = await api("GET", `/sessions?${apiQuery(params)}`);
    body.replaceChildren(...page.sessions.map((row) => el("tr", { "data-testid": "session-row" },
      el("td", {}, el("input", { type: "checkbox", "data-testid": `select-${row.sessionId}`,
        checked: selected.has(row.sessionId), onchange: (event) => {
          if (event.target.checked) selected.add(row.sessionId); else selected.delete(row.sessionId);
          drawBulk();
        } })),
      el("td", {}, el("a", { href: `#/session/${row.sessionId}` }, row.sessionId)),
      el("td", {}, row.agentType), el("td", { "data-testid": "session-status" }, row.status),
      el("td", {}, row.userId || ""), el("td", {}, (row.tags || []).join(", ")),
      el("td", {}, row.pendingCalls), el("td", {}, row.stepCount),
      el("td", { title: when(row.updatedAt) }, ago(row.updatedAt)))));
    pages.replaceChildren(pager("sessions", params, page.nextCursor));
  };
  await refresh();
  timer = setInterval(() => refresh().catch(showError), REFRESH_MS);
}

// The fields of a form built from a JSON Schema: a scalar is one input, an object of scalars one
// input per property. `null` when the schema is of another shape (the raw box serves then).
function schemaFields(schema, prefix) {
  const scalar = (name, property, required) => {
    const testid = `${prefix}-${name || "value"}`;
    const label = `${property.title || name || "answer"}${required ? " *" : ""}`;
    let input;
    if (Array.isArray(property.enum)) {
      input = el("select", { name, "data-testid": testid }, ...property.enum.map((value) => el("option", { value: JSON.stringify(value) }, String(value))));
    } else if (property.type === "boolean") {
      input = el("input", { type: "checkbox", name, "data-testid": testid });
    } else if (property.type === "number" || property.type === "integer") {
      input = el("input", { type: "number", name, step: property.type === "integer" ? "1" : "any", required,
        "data-testid": testid });
    } else if (property.type === "string") {
      input = el("input", { type: "text", name, size: 50, required, placeholder: property.description || "",
        "data-testid": testid });
    } else return null;
    const read = () => {
      if (Array.isArray(property.enum)) return JSON.parse(input.value);
      if (property.type === "boolean") return input.checked;
      if (property.type === "number" || property.type === "integer") return input.value === "" ? undefined : Number(input.value);
      return input.value;
    };
    return { node: el("label", { class: "field" }, label, " ", input), read };
  };
  if (!schema || typeof schema !== "object") return null;
  if (schema.type !== "object") {
    const one = scalar("", schema, true);
    return one && { nodes: [one.node], read: one.read };
  }
  const required = new Set(schema.required || []);
  const fields = Object.entries(schema.properties || {}).map(([name, property]) => [name, scalar(name, property, required.has(name))]);
  if (!fields.length || fields.some(([, field]) => !field)) return null;
  return {
    nodes: fields.map(([, field]) => field.node),
    read: () => Object.fromEntries(fields.map(([name, field]) => [name, field.read()]).filter(([, value]) => value !== undefined && value !== "")),
  };
}

// What a call's input says, as name: value lines (JSON only for nested values).
function readable(input) {
  if (!input || typeof input !== "object" || Array.isArray(input)) return el("pre", {}, JSON.stringify(input, null, 2));
  return el("dl", { class: "input" }, ...Object.entries(input).flatMap(([name, value]) =>
    [el("dt", {}, name), el("dd", {}, typeof value === "string" ? value : JSON.stringify(value))]));
}

// One waiting call: who and what it is, and the form that answers it.
function callForm(call, after) {
  const id = call.toolCallId;
  const box = el("div", { class: "call", "data-testid": `call-${id}` },
    el("div", { class: "call-head" }, el("strong", {}, call.toolName), ` ${call.kind === "approval" ? "approval" : "question"} `,
      el("code", {}, id), " · agent ", el("span", { "data-testid": `agent-${id}` }, call.agentType),
      call.userId ? [" · user ", el("span", { "data-testid": `user-${id}` }, call.userId)] : "",
      " · session ", el("a", { href: `#/session/${call.sessionId}` }, call.sessionId),
      call.ownerSessionId !== call.sessionId ? ` (child ${call.ownerSessionId})` : ""),
    el("div", { class: "call-times" }, "waiting ", el("span", { "data-testid": `age-${id}` }, span(Date.now() - call.awaitedSince)),
      " · deadline ", timeAt(call.deadlineAt), ` (in ${span(call.deadlineAt - Date.now())})`),
    readable(call.input));
  const submit = async (body) => {
    const answer = await api("POST", "/submit-tool-result", Object.assign({ sessionId: call.sessionId, toolCallId: id }, body));
    if (answer.continuation && answer.continuation.kind === "caller_resumes") {
      await api("POST", "/resume", { sessionId: call.sessionId, mode: "continue" });
    }
    after();
  };
  if (call.kind === "approval") {
    const edited = el("textarea", { rows: 3, cols: 60, "data-testid": `edit-${id}` }, JSON.stringify(call.input, null, 2));
    const reason = el("input", { type: "text", size: 40, "data-testid": `reason-${id}`, placeholder: "why (the model sees it)" });
    box.append(el("details", {}, el("summary", {}, "Edit the arguments before approving"), edited),
      el("div", { class: "actions" },
        el("button", { "data-testid": `approve-${id}`, onclick: () => {
          const text = edited.value.trim();
          const changed = text !== JSON.stringify(call.input, null, 2);
          submit(Object.assign({ kind: "approval-response", approvalId: call.approvalId, approved: true },
            changed ? { arguments: JSON.parse(text) } : {})).catch(showError);
        } }, "Approve"), " ", reason, " ",
        el("button", { class: "danger", "data-testid": `deny-${id}`, onclick: () => submit({
          kind: "approval-response", approvalId: call.approvalId, approved: false,
          reason: reason.value.trim() || "denied from the console" }).catch(showError) }, "Deny")));
    return box;
  }
  const schema = call.outputSchema || (call.render && call.render.outputSchema);
  const form = schemaFields(schema, `field-${id}`);
  // The fallback: one box, JSON or else plain text, empty (never a pre-filled `{}`).
  const raw = el("textarea", { rows: 3, cols: 60, "data-testid": `result-${id}`, placeholder: "JSON, or plain text" });
  const fromRaw = () => { const text = raw.value; try { return JSON.parse(text); } catch (_) { return text; } };
  const failure = el("input", { type: "text", size: 40, "data-testid": `fail-reason-${id}`, placeholder: "what went wrong" });
  box.append(el("form", { class: "answer", "data-testid": `form-${id}`, onsubmit: (event) => {
      event.preventDefault();
      submit({ result: form ? form.read() : fromRaw() }).catch(showError);
    } }, ...(form ? form.nodes : [raw]), " ",
    el("button", { type: "submit", "data-testid": `answer-${id}` }, "Answer")),
    el("details", {}, el("summary", {}, "Fail the call instead"), failure, " ",
      el("button", { class: "danger", "data-testid": `fail-${id}`, onclick: () => submit({
        error: failure.value.trim() || "failed from the console" }).catch(showError) }, "Fail")));
  return box;
}

async function inboxView(params) {
  const list = el("div", { "data-testid": "inbox" });
  const pages = el("div");
  const updated = el("span", { class: "muted", "data-testid": "inbox-updated" });
  main.replaceChildren(filtersForm(params, (next) => { location.hash = `#/inbox?${next}`; }),
    el("p", { class: "muted" }, "Live: the server sends the inbox as it changes. ", updated), list, pages);
  let shown = "";
  let calls = [];
  const draw = (page) => {
    updated.textContent = `Changed at ${when(Date.now())}.`;
    calls = page.calls;
    const ids = page.calls.map((call) => `${call.sessionId}/${call.toolCallId}`).join(",");
    // A card being filled in is kept: only a change of the waiting calls redraws the list.
    if (ids === shown) return;
    shown = ids;
    list.replaceChildren(...(page.calls.length ? page.calls.map((call) => callForm(call, () => {}))
      : [el("p", {}, "Nobody is waiting on a person.")]));
    pages.replaceChildren(pager("inbox", params, page.nextCursor));
  };
  // Ages count on here; the stream sends only changes.
  timer = setInterval(() => {
    for (const call of calls) {
      const age = document.querySelector(`[data-testid="age-${CSS.escape(call.toolCallId)}"]`);
      if (age) age.textContent = span(Date.now() - call.awaitedSince);
    }
  }, 1000);
  const controller = new AbortController();
  follow = controller;
  const response = await fetch(`/pending/stream?${apiQuery(params)}`, {
    headers: { authorization: `Bearer ${key()}` }, signal: controller.signal });
  if (!response.ok) {
    const answer = await response.json().catch(() => ({}));
    throw new Error(`${answer.code || response.status}: ${answer.error || ""}`);
  }
  readEvents(response, (name, data) => {
    if (name === "pending") draw(JSON.parse(data));
    if (name === "error") showError(new Error(JSON.parse(data).error || "the inbox stream ended"));
  }).catch(() => {});
}

// Calls `onEvent(name, data)` for each server-sent event of `response` until it ends.
async function readEvents(response, onEvent) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const event = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let name = "message";
      const data = [];
      for (const line of event.split("\n")) {
        if (line.startsWith("event:")) name = line.slice(6).trim();
        if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
      }
      if (data.length) onEvent(name, data.join("\n"));
    }
  }
}

// The conversation as people read it: messages, tool calls with their results beside them,
// each step with when it was answered and how long it took after the one before.
function conversation(messages) {
  const results = new Map();
  for (const message of messages) if (message.role === "tool") results.set(message.toolCallId, message);
  let step = 0;
  let previous = null;
  const items = [];
  for (const message of messages) {
    if (message.role === "user") items.push(el("div", { class: "message user" }, el("div", { class: "who" }, "user"), message.content));
    if (message.role === "system") items.push(el("div", { class: "message system" }, el("div", { class: "who" }, "system"), message.content));
    if (message.role !== "assistant") continue;
    step += 1;
    const at = message.chat && message.chat.answeredAt;
    const took = at && previous ? ` · ${span(at - previous)} after the step before` : "";
    if (at) previous = at;
    const calls = (message.toolCalls || []).map((call) => {
      const result = results.get(call.id);
      const outcome = !result ? el("span", { class: "muted" }, "no answer yet")
        : result.error ? el("span", { class: "bad" }, `error ${result.error.code}: ${result.error.message}`)
          : el("code", {}, JSON.stringify(result.result));
      return el("div", { class: "tool-call" }, el("strong", {}, call.name), " ", el("code", {}, JSON.stringify(call.arguments)), " → ", outcome);
    });
    items.push(el("div", { class: "message assistant", "data-step": String(step) },
      el("div", { class: "who" }, `step ${step}`, at ? [" · ", timeAt(at)] : "", took),
      message.content ? el("div", { class: "text" }, message.content) : "", ...calls));
  }
  return items.length ? items : [el("p", { class: "muted" }, "No messages yet.")];
}

// The checkpoints a session can be forked or rewound from: its start and after each step.
function timeline(sessionId, stepCount) {
  const rows = [];
  for (let checkpoint = 0; checkpoint <= stepCount; checkpoint += 1) {
    rows.push(el("li", { "data-checkpoint": String(checkpoint) },
      checkpoint === 0 ? "start " : `after step ${checkpoint} `,
      el("button", { "data-testid": `fork-${checkpoint}`, onclick: () => api("POST", "/fork", { sessionId, checkpoint })
        .then((fork) => { location.hash = `#/session/${fork.sessionId}`; }).catch(showError) }, "Fork"), " ",
      confirmed("Rewind", `rewind-${checkpoint}`, `Rewind this session to ${checkpoint === 0 ? "its start" : `step ${checkpoint}`}?`,
        () => api("POST", "/resume", { sessionId, mode: "from_checkpoint", checkpointId: checkpoint }).then(() => route()).catch(showError))));
  }
  return rows;
}

function describe(chunk) {
  switch (chunk.type) {
    case "text_delta": return chunk.delta;
    case "tool_start": return `\n→ ${chunk.toolName} ${JSON.stringify(chunk.input)}\n`;
    case "tool_end": return `← ${chunk.toolName} ${JSON.stringify(chunk.result ?? chunk.error ?? "")}\n`;
    case "state_patch": return `state ${JSON.stringify(chunk.patch)}\n`;
    case "subagent_start": case "subagent_end": return `\n[${chunk.type} ${chunk.subSessionId || ""}]\n`;
    case "suspended": return "\n(paused: waiting on a person)\n";
    case "end": return `\n■ ${chunk.status} ${chunk.output || ""}\n`;
    default: return "";
  }
}

async function followStream(sessionId, into) {
  const controller = new AbortController();
  follow = controller;
  const response = await fetch(`/sse?sessionId=${encodeURIComponent(sessionId)}`, {
    headers: { authorization: `Bearer ${key()}` }, signal: controller.signal });
  await readEvents(response, (name, data) => {
    if (name !== "message") return;
    try { into.append(describe(JSON.parse(data))); } catch (_) { /* not a chunk */ }
  });
}

// The tree outline: each session inside the one whose sub-agent call started it (nested lists,
// one level deeper each); a session whose parent is not listed stays at the top.
function treeItems(rows) {
  const listed = new Set(rows.map((row) => row.sessionId));
  const below = new Map();
  for (const row of rows) {
    const parent = row.parentSessionId && listed.has(row.parentSessionId) ? row.parentSessionId : "";
    if (!below.has(parent)) below.set(parent, []);
    below.get(parent).push(row);
  }
  const items = (parent, depth) => (below.get(parent) || []).map((row) => {
    const children = items(row.sessionId, depth + 1);
    return el("li", { "data-depth": String(depth), "data-session": row.sessionId },
      el("a", { href: `#/session/${row.sessionId}` }, row.sessionId),
      ` ${row.agentType} ${row.status}`, row.pendingCalls ? ` (${row.pendingCalls} waiting)` : "",
      children.length ? el("ul", {}, ...children) : "");
  });
  return items("", 0);
}

function usageTable(rollup) {
  const rows = [["input tokens", rollup.inputTokens], ["output tokens", rollup.outputTokens],
    ...Object.entries(rollup.toolCalls || {}).map(([tool, count]) => [`${tool} calls`, count]),
    ["waiting on people", span(rollup.clientToolWaitMs || 0)], ["lapsed calls", rollup.clientToolTimeouts || 0]];
  return el("table", { class: "usage" }, ...rows.map(([name, value]) => el("tr", {}, el("th", {}, name), el("td", {}, value ?? 0))));
}

async function sessionView(sessionId) {
  const state = el("pre", { "data-testid": "state" });
  const stream = el("pre", { class: "chunk-text", "data-testid": "stream" });
  const talk = el("div", { class: "conversation", "data-testid": "conversation" });
  const calls = el("div");
  const usage = el("div", { "data-testid": "usage" });
  const status = el("span", { "data-testid": "status" });
  const facts = el("div", { class: "muted", "data-testid": "facts" });
  const workflow = el("div", { "data-testid": "workflow" });
  const tree = el("ul", { "data-testid": "tree" });
  const checkpoints = el("ol", { class: "timeline", "data-testid": "timeline" });
  const act = (what) => what().then(() => route()).catch(showError);
  main.replaceChildren(el("h2", {}, sessionId, " ", status), facts,
    el("div", { class: "actions" },
      confirmed("Interrupt", "interrupt", "Interrupt the current run?", () => act(() => api("POST", "/interrupt", { sessionId }))), " ",
      confirmed("Abort", "abort", "Abort the run? The session fails.", () => act(() => api("POST", "/abort", { sessionId }))), " ",
      confirmed("Delete", "delete", "Delete the session and its whole tree for good? One waiting on a person is interrupted first.",
        () => api("POST", "/delete", { sessionId }).then(() => { location.hash = "#/sessions"; }).catch(showError))),
    workflow, el("h3", {}, "Waiting on a person"), calls, el("h3", {}, "Conversation"), talk,
    el("h3", {}, "Checkpoints"), checkpoints, el("h3", {}, "Tree"), tree, el("h3", {}, "Usage"), usage,
    el("details", {}, el("summary", {}, "Live stream"), stream),
    el("details", {}, el("summary", {}, "Status as JSON"), state));
  let steps = -1;
  let pending = null;
  const refresh = async () => {
    const session = await api("GET", `/status?sessionId=${encodeURIComponent(sessionId)}`);
    status.textContent = session.status;
    status.setAttribute("data-state", session.status);
    facts.replaceChildren(`agent ${session.agentType}`, session.userId ? ` · user ${session.userId}` : "",
      ` · started `, timeAt(session.createdAt), ` · updated ${ago(session.updatedAt)}`);
    const id = session.workflowId || "";
    workflow.replaceChildren("Temporal workflow ", TEMPORAL_UI && id
      ? el("a", { href: `${TEMPORAL_UI}/workflows/${encodeURIComponent(id)}`, target: "_blank",
          rel: "noopener", "data-testid": "temporal-link" }, id)
      : el("code", {}, id || "none (nothing runs)"));
    state.textContent = JSON.stringify(session, null, 2);
    const waiting = (session.pending || []).map((call) => call.toolCallId).join(",");
    if (waiting !== pending) {
      pending = waiting;
      calls.replaceChildren(...((session.pending || []).length ? session.pending.map((call) => callForm(call, refresh))
        : [el("p", { class: "muted" }, "Nobody.")]));
    }
    if (session.stepCount !== steps || session.status === "active") {
      steps = session.stepCount;
      const snapshot = await api("GET", `/snapshot?sessionId=${encodeURIComponent(sessionId)}`);
      talk.replaceChildren(...conversation(snapshot.messages || []));
      checkpoints.replaceChildren(...timeline(sessionId, session.stepCount));
    }
    const outline = await api("GET", `/sessions?root=${encodeURIComponent(session.rootSessionId)}`);
    tree.replaceChildren(...treeItems(outline.sessions));
    usage.replaceChildren(usageTable((await api("GET", `/usage?sessionId=${encodeURIComponent(sessionId)}`)).rollup));
  };
  await refresh();
  timer = setInterval(() => refresh().catch(showError), REFRESH_MS);
  followStream(sessionId, stream).catch(() => {});
}

function showError(error) {
  main.prepend(el("p", { class: "error", "data-testid": "error" }, error.message));
}

async function route() {
  clearInterval(timer);
  if (follow) follow.abort();
  if (!key()) { document.getElementById("who").textContent = ""; return signIn(); }
  document.getElementById("who").textContent = "signed in";
  const [path, query] = (location.hash.slice(1) || "/sessions").split("?");
  const params = new URLSearchParams(query || "");
  try {
    if (path.startsWith("/session/")) await sessionView(decodeURIComponent(path.slice(9)));
    else if (path === "/inbox") await inboxView(params);
    else await sessionsView(params);
  } catch (error) { showError(error); }
}

document.getElementById("sign-out").onclick = () => { sessionStorage.removeItem(KEY); route(); };
window.addEventListener("hashchange", route);
route();
