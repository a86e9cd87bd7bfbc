// The operator console's script (console.html; served under the page's CSP, no inline script).
"use strict";
const main = document.getElementById("main");
const KEY = "batonOperatorKey";
const TEMPORAL_UI = document.querySelector('meta[name="baton-temporal-ui"]').content;
let timer = null;
let follow = null;

function key() { return sessionStorage.getItem(KEY); }

function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (name === "onclick" || name === "onsubmit") node[name] = value;
    else node.setAttribute(name, value);
  }
  for (const child of children) node.append(child instanceof Node ? child : String(child ?? ""));
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

function when(ms) { return ms ? new Date(ms).toISOString().replace("T", " ").slice(0, 19) : ""; }

function filtersForm(params, onchange) {
  const field = (name, label) => el("label", {}, label, " ",
    el("input", { name, value: params.get(name) || "", "data-testid": `filter-${name}`, size: 14 }));
  const form = el("form", { class: "filters", onsubmit: (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    for (const [name, value] of new FormData(event.target)) if (value) next.append(name, value);
    onchange(next);
  } }, field("status", "status"), field("agent", "agent"), field("userId", "user"),
     field("tag", "tag"),
     el("label", {}, el("input", { type: "checkbox", name: "awaiting", value: "person",
       ...(params.get("awaiting") ? { checked: "" } : {}) }), " waiting on a person"),
     el("button", { type: "submit" }, "Filter"));
  return form;
}

async function sessionsView(params) {
  const body = el("tbody");
  main.replaceChildren(filtersForm(params, (next) => { location.hash = `#/sessions?${next}`; }),
    el("table", { "data-testid": "sessions" }, el("thead", {}, el("tr", {},
      ...["session", "agent", "status", "user", "tags", "pending", "steps", "updated"].map((h) => el("th", {}, h)))), body));
  const refresh = async () => {
    const page = await api("GET", `/sessions?${params}`);
    body.replaceChildren(...page.sessions.map((row) => el("tr", { "data-testid": "session-row" },
      el("td", {}, el("a", { href: `#/session/${row.sessionId}` }, row.sessionId)),
      el("td", {}, row.agentType), el("td", { "data-testid": "session-status" }, row.status),
      el("td", {}, row.userId || ""), el("td", {}, (row.tags || []).join(", ")),
      el("td", {}, row.pendingCalls), el("td", {}, row.stepCount), el("td", {}, when(row.updatedAt)))));
  };
  await refresh();
  timer = setInterval(() => refresh().catch(showError), 2000);
}

function callForm(call, after) {
  const box = el("div", { class: "call", "data-testid": `call-${call.toolCallId}` },
    el("div", {}, el("strong", {}, call.toolName), ` (${call.kind}) `, el("code", {}, call.toolCallId),
      ` session `, el("a", { href: `#/session/${call.sessionId}` }, call.sessionId),
      call.ownerSessionId !== call.sessionId ? ` child ${call.ownerSessionId}` : "",
      ` deadline ${when(call.deadlineAt)}`),
    el("pre", {}, JSON.stringify(call.input, null, 2)));
  const submit = async (body) => {
    const answer = await api("POST", "/submit-tool-result", Object.assign({
      sessionId: call.sessionId, toolCallId: call.toolCallId }, body));
    if (answer.continuation && answer.continuation.kind === "caller_resumes") {
      await api("POST", "/resume", { sessionId: call.sessionId, mode: "continue" });
    }
    after();
  };
  if (call.kind === "approval") {
    const edited = el("textarea", { rows: 3, cols: 60, "data-testid": `edit-${call.toolCallId}` },
      JSON.stringify(call.input));
    box.append(edited, el("br"),
      el("button", { "data-testid": `approve-${call.toolCallId}`, onclick: () => submit({
        kind: "approval-response", approvalId: call.approvalId, approved: true,
        arguments: JSON.parse(edited.value) }).catch(showError) }, "Approve"),
      " ",
      el("button", { "data-testid": `deny-${call.toolCallId}`, onclick: () => submit({
        kind: "approval-response", approvalId: call.approvalId, approved: false,
        reason: "denied from the console" }).catch(showError) }, "Deny"));
  } else {
    const result = el("textarea", { rows: 3, cols: 60, "data-testid": `result-${call.toolCallId}` }, "{}");
    box.append(result, el("br"), el("button", { "data-testid": `answer-${call.toolCallId}`,
      onclick: () => submit({ result: JSON.parse(result.value) }).catch(showError) }, "Answer"));
  }
  return box;
}

async function inboxView(params) {
  const list = el("div", { "data-testid": "inbox" });
  main.replaceChildren(filtersForm(params, (next) => { location.hash = `#/inbox?${next}`; }), list);
  const page = await api("GET", `/pending?${params}`);
  list.replaceChildren(...(page.calls.length ? page.calls.map((call) => callForm(call, () => route()))
    : [el("p", {}, "Nobody is waiting on a person.")]));
}

function describe(chunk) {
  switch (chunk.type) {
    case "text_delta": return chunk.delta;
    case "tool_start": return `\n→ ${chunk.toolName} ${JSON.stringify(chunk.input)}\n`;
    case "tool_end": return `← ${chunk.toolName} ${JSON.stringify(chunk.result ?? chunk.error ?? "")}\n`;
    case "state_patch": return `state ${JSON.stringify(chunk.patch)}\n`;
    case "subagent_start": case "subagent_end": return `\n[${chunk.type} ${chunk.subSessionId || ""}]\n`;
    case "end": return `\n■ ${chunk.status} ${chunk.output || ""}\n`;
    default: return `\n[${chunk.type}]\n`;
  }
}

async function followStream(sessionId, into) {
  const controller = new AbortController();
  follow = controller;
  const response = await fetch(`/sse?sessionId=${encodeURIComponent(sessionId)}`, {
    headers: { authorization: `Bearer ${key()}` }, signal: controller.signal });
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
      for (const line of event.split("\n")) {
        if (line.startsWith("data:")) {
          try { into.append(describe(JSON.parse(line.slice(5)))); } catch (_) { /* not a chunk */ }
        }
      }
    }
  }
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

async function sessionView(sessionId) {
  const state = el("pre", { "data-testid": "state" });
  const stream = el("pre", { class: "chunk-text", "data-testid": "stream" });
  const calls = el("div");
  const usage = el("pre");
  const status = el("span", { "data-testid": "status" });
  const workflow = el("div", { "data-testid": "workflow" });
  const tree = el("ul", { "data-testid": "tree" });
  const checkpoint = el("input", { size: 4, value: "0", "data-testid": "checkpoint" });
  const act = (what) => what().then(() => route()).catch(showError);
  main.replaceChildren(el("h2", {}, sessionId, " ", status),
    el("div", {},
      el("button", { onclick: () => act(() => api("POST", "/interrupt", { sessionId })) }, "Interrupt"), " ",
      el("button", { onclick: () => act(() => api("POST", "/abort", { sessionId })) }, "Abort"), " checkpoint ",
      checkpoint, " ",
      el("button", { onclick: () => act(() => api("POST", "/resume", { sessionId, mode: "from_checkpoint",
        checkpointId: Number(checkpoint.value) })) }, "Rewind"), " ",
      el("button", { "data-testid": "fork", onclick: () => api("POST", "/fork", { sessionId,
        checkpoint: Number(checkpoint.value) }).then((fork) => { location.hash = `#/session/${fork.sessionId}`; }).catch(showError) }, "Fork")),
    workflow, el("h3", {}, "Tree"), tree, el("h3", {}, "Waiting on a person"), calls, el("h3", {}, "Stream"), stream,
    el("h3", {}, "State"), state, el("h3", {}, "Usage"), usage);
  const refresh = async () => {
    const session = await api("GET", `/status?sessionId=${encodeURIComponent(sessionId)}`);
    status.textContent = session.status;
    const id = session.workflowId || "";
    workflow.replaceChildren("Temporal workflow ", TEMPORAL_UI && id
      ? el("a", { href: `${TEMPORAL_UI}/workflows/${encodeURIComponent(id)}`, target: "_blank",
          rel: "noopener", "data-testid": "temporal-link" }, id)
      : el("code", {}, id));
    status.setAttribute("data-state", session.status);
    state.textContent = JSON.stringify(session, null, 2);
    calls.replaceChildren(...(session.pending || []).map((call) => callForm(call, refresh)));
    const outline = await api("GET", `/sessions?root=${encodeURIComponent(session.rootSessionId)}`);
    tree.replaceChildren(...treeItems(outline.sessions));
    usage.textContent = JSON.stringify((await api("GET", `/usage?sessionId=${encodeURIComponent(sessionId)}`)).rollup, null, 2);
  };
  await refresh();
  timer = setInterval(() => refresh().catch(showError), 1500);
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
