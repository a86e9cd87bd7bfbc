// batond's demo chat page: a client of the chat route speaking the protocol `useChat` speaks (the
// AI SDK's UI message stream, v1), written without the SDK so the page needs no build step and
// no CDN. Its state follows `ai`'s AbstractChat: a response streams into the trailing assistant
// message; answering a tool part settles it and sends when the stock predicates (complete with
// tool calls, or with approval responses) say so. Everything shown is built with DOM nodes and
// textContent: no server text ever becomes HTML.
//
// The credential comes from `batond dev`'s demo mode (POST /chat/demo-token), never the URL; the
// API is this page's own origin.

/** Automatic re-sends in a row (with no action of the person between) before the page stops. */
const MAX_AUTO_RESENDS = 3;
/** The first re-send's delay; each next one doubles it. */
const RESEND_BACKOFF_MS = 400;

const api = `${location.origin}/chat`;
const agent = new URLSearchParams(location.search).get('agent') ?? 'demo_hitl';
let token = null;
let userId = 'demo-user';
let chatId = '';
let messages = [];
/** ready | submitted | streaming | stopped | error | halted */
let status = 'ready';
let error = null;
let held = [];
let controller = null;
let stopping = false;
let autoResends = 0;
let chats = [];
/** The user message being edited (its id), while the composer holds its text. */
let editing = null;
/** Files picked for the next message, as file parts (`data:` URLs). */
let attached = [];
/** Chat titles (the first user message's text), by chat id: kept by this browser for the chats
 * it started, read from a chat's snapshot for the others. */
const TITLES = 'batonChatTitles';
const titles = new Map(Object.entries(JSON.parse(localStorage.getItem(TITLES) ?? '{}')));
const saveTitles = () => localStorage.setItem(TITLES, JSON.stringify(Object.fromEntries(titles)));
const keepTitle = (id, text, replace = false) => {
  if ((titles.has(id) && !replace) || !text) return;
  titles.set(id, text.slice(0, 80));
  saveTitles();
};

const $ = (id) => document.getElementById(id);
const headers = () => ({
  'Content-Type': 'application/json',
  ...(token ? { Authorization: `Bearer ${token}` } : {}),
});
const freshId = () => crypto.randomUUID().replaceAll('-', '');

const isTool = (p) => p.type.startsWith('tool-') || p.type === 'dynamic-tool';
const toolName = (p) => (p.type === 'dynamic-tool' ? p.toolName : p.type.slice(5));
const lastStepTools = (m) => {
  const start = m.parts.map((p) => p.type).lastIndexOf('step-start');
  return m.parts.slice(start + 1).filter(isTool).filter((p) => !p.providerExecuted);
};
function completeWithToolCalls(m) {
  const tools = lastStepTools(m);
  return tools.length > 0 && tools.every((p) => p.state === 'output-available' || p.state === 'output-error');
}
function completeWithApprovals(m) {
  const tools = lastStepTools(m);
  return tools.some((p) => p.state === 'approval-responded') &&
    tools.every((p) => ['output-available', 'output-error', 'approval-responded'].includes(p.state));
}
const last = () => messages[messages.length - 1];
const shouldSend = () => last()?.role === 'assistant' && (completeWithToolCalls(last()) || completeWithApprovals(last()));
/** Whether a part asks the person for something: an answer or an approval. */
const asksPerson = (p) => isTool(p) && !p.providerExecuted && (p.state === 'input-available' || p.state === 'approval-requested');
// A stopped run's calls were closed by the stop: nothing is open any more.
const widgetOpen = () => !['stopped', 'stopping'].includes(status) && last()?.role === 'assistant' && last().parts.some(asksPerson);
const busy = () => status === 'submitted' || status === 'streaming';

/** A refusal's sentence, from the error body `{code, error}` or the status. */
async function refusal(response) {
  let body = {};
  try { body = await response.json(); } catch { /* not JSON */ }
  const code = body.code ?? `HTTP ${response.status}`;
  if (response.status === 401) return `You are not signed in, or your sign-in expired (${code}). Reload the page.`;
  if (response.status === 403) return `This chat is not yours, or your token may not do this (${code}).`;
  if (response.status === 409) return `The chat changed meanwhile: ${body.error ?? code}. Reload to see where it is.`;
  if (response.status === 429) return `Too many requests for now (${code}); try again in a moment.`;
  return `The server refused the request: ${body.error ?? code} (${code}).`;
}

async function request(trigger, init) {
  status = 'submitted';
  error = null;
  stopping = false;
  controller = new AbortController();
  render();
  try {
    const response = await fetch(init?.url ?? api, init?.url ? { headers: headers(), signal: controller.signal } : {
      method: 'POST', headers: headers(), signal: controller.signal,
      body: JSON.stringify({
        id: chatId, messages, trigger, agent, userId: token ? undefined : userId,
        messageId: init?.messageId ?? (last()?.role === 'assistant' ? last().id : undefined),
      }),
    });
    if (response.status === 204) { status = 'ready'; render(); return; }
    if (!response.ok) throw new Error(await refusal(response));
    await consume(response.body);
    status = 'ready';
  } catch (e) {
    // Stopped once the server said so (`stop()`), not when the response is cut: until then the
    // run may still be working.
    if (stopping) { if (status !== 'stopped' && status !== 'error') status = 'stopping'; }
    else { status = 'error'; error = String(e.message ?? e); }
  }
  controller = null;
  render();
  refreshChats();
  if (status === 'ready' && shouldSend()) return resend();
  releaseHeld();
}

/** A send the page makes by itself (the predicate still holds after a response): capped, and
 * each later than the last, so a broken server cannot draw a storm of requests. */
async function resend() {
  if (autoResends >= MAX_AUTO_RESENDS) {
    status = 'halted';
    error = 'The server keeps asking for the same answers again; the page stopped re-sending. Reload to try again.';
    render();
    return;
  }
  const delay = RESEND_BACKOFF_MS * 2 ** autoResends;
  autoResends += 1;
  await new Promise((resolve) => setTimeout(resolve, delay));
  return request('submit-message');
}

/** A send the person caused: the re-send count starts again. */
function personSends(trigger, init) {
  autoResends = 0;
  return request(trigger, init);
}

/** Applies a UI message stream to the trailing assistant message (or a new one). */
async function consume(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let message = last()?.role === 'assistant' ? last() : null;
  const texts = {};
  const find = (id) => message.parts.find((p) => isTool(p) && p.toolCallId === id) ?? {};
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    let cut;
    while ((cut = buffer.indexOf('\n\n')) >= 0) {
      const event = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const data = event.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
      if (!data || data === '[DONE]') continue;
      const chunk = JSON.parse(data);
      if (chunk.type === 'start') {
        if (!message || message.id !== chunk.messageId) {
          message = { id: chunk.messageId, role: 'assistant', parts: [] };
          messages.push(message);
        }
      } else if (!message) continue;
      else if (chunk.type === 'start-step') message.parts.push({ type: 'step-start' });
      else if (chunk.type === 'text-start') message.parts.push(texts[chunk.id] = { type: 'text', text: '', textId: chunk.id });
      else if (chunk.type === 'text-delta') { if (texts[chunk.id]) texts[chunk.id].text += chunk.delta; }
      else if (chunk.type === 'reasoning-start') message.parts.push(texts[chunk.id] = { type: 'reasoning', text: '', textId: chunk.id });
      else if (chunk.type === 'reasoning-delta') { if (texts[chunk.id]) texts[chunk.id].text += chunk.delta; }
      else if (chunk.type === 'tool-input-available') {
        message.parts.push({ type: `tool-${chunk.toolName}`, toolCallId: chunk.toolCallId, state: 'input-available',
          input: chunk.input, providerExecuted: chunk.providerExecuted });
      } else if (chunk.type === 'tool-approval-request') Object.assign(find(chunk.toolCallId), { state: 'approval-requested', approval: { id: chunk.approvalId } });
      else if (chunk.type === 'tool-output-available') Object.assign(find(chunk.toolCallId), { state: 'output-available', output: chunk.output, ...(chunk.providerExecuted ? { providerExecuted: true } : {}) });
      else if (chunk.type === 'tool-output-error') Object.assign(find(chunk.toolCallId), { state: 'output-error', errorText: chunk.errorText, ...(chunk.providerExecuted ? { providerExecuted: true } : {}) });
      else if (chunk.type === 'tool-output-denied') Object.assign(find(chunk.toolCallId), { state: 'output-denied' });
      else if (chunk.type === 'error') throw new Error(`The agent failed: ${chunk.errorText}`);
      else if (chunk.type.startsWith('data-') && !chunk.transient) {
        const kept = { type: chunk.type, id: chunk.id, data: chunk.data };
        const same = chunk.id ? message.parts.findIndex((p) => p.type === chunk.type && p.id === chunk.id) : -1;
        if (same >= 0) message.parts[same] = kept; else message.parts.push(kept);
      }
      // The server's metadata (times, usage, models), merged as useChat merges it.
      if (chunk.messageMetadata) message.metadata = { ...message.metadata, ...chunk.messageMetadata };
      status = 'streaming';
      render();
    }
  }
}

/** Settles a part; the send that follows is the person's, or (`byPage`: a call the page cannot
 * render, settled by itself) one of the capped automatic ones. */
function settle(part, answer, byPage = false) {
  Object.assign(part, answer);
  render();
  if (busy() || !shouldSend()) return;
  if (byPage) resend(); else personSends('submit-message');
}
const addToolOutput = (part, output) => settle(part, { state: 'output-available', output });
const addToolError = (part, errorText) => settle(part, { state: 'output-error', errorText });
const addToolApprovalResponse = (part, approved) =>
  settle(part, { state: 'approval-responded', approval: { id: part.approval.id, approved } });

function send(text) {
  if (editing) return sendEdit(text);
  if (widgetOpen() || busy()) {
    held.push(text);
    render();
    return;
  }
  const files = attached;
  attached = [];
  renderAttached();
  if (!messages.length) keepTitle(chatId, text);
  messages.push({ id: freshId(), role: 'user', parts: [{ type: 'text', text }, ...files] });
  personSends('submit-message');
}

/** Sends the edited text in place of the message being edited: it and what followed leave the
 * chat, and the server answers the edited one (useChat's `sendMessage` with a `messageId`). */
function sendEdit(text) {
  const id = editing;
  editing = null;
  const at = messages.findIndex((m) => m.id === id);
  if (at < 0 || busy()) { render(); return; }
  const files = messages[at].parts.filter((p) => p.type === 'file');
  // The chat's first message, edited, titles it anew.
  if (!messages.slice(0, at).some((m) => m.role === 'user')) keepTitle(chatId, text, true);
  messages = messages.slice(0, at);
  messages.push({ id, role: 'user', parts: [{ type: 'text', text }, ...files] });
  personSends('submit-message', { messageId: id });
}

/** Asks for the last answer again: the assistant message leaves the chat and the server
 * answers the last user message anew (useChat's `regenerate`). */
function regenerate() {
  if (busy() || last()?.role !== 'assistant') return;
  const removed = messages.pop();
  personSends('regenerate-message', { messageId: removed.id });
}

/** Starts editing a user message: its text goes to the composer. */
function startEdit(message) {
  editing = message.id;
  $('text').value = message.parts.filter((p) => p.type === 'text').map((p) => p.text).join('');
  $('text').focus();
  render();
}
function releaseHeld() {
  if (held.length && !widgetOpen() && !busy()) send(held.shift());
}

/** The stop button: the response is aborted and the server told, which interrupts the run. */
async function stop() {
  stopping = true;
  held = [];
  controller?.abort();
  const answer = await fetch(`${api}/${chatId}/stop`, { method: 'POST', headers: headers() });
  // 409: no run was working any more (it ended as the button was pressed).
  if (!answer.ok && answer.status !== 409) { status = 'error'; error = await refusal(answer); }
  else status = 'stopped';
  render();
  refreshChats();
}

// ---- rendering -------------------------------------------------------------------------------

function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (value === undefined) continue;
    if (key.startsWith('on')) node.addEventListener(key.slice(2), value); else node.setAttribute(key, value);
  }
  node.append(...children);
  return node;
}

/** Markdown to DOM nodes: paragraphs, headings, lists, fenced code, inline code, bold, italics,
 * http(s) links. Text only ever lands in textContent, so raw HTML shows as text. */
function markdown(text) {
  const root = el('div', { class: 'md', 'data-testid': 'text' });
  const lines = text.split('\n');
  let paragraph = [];
  let list = null;
  const flush = () => {
    if (paragraph.length) root.append(el('p', {}, ...inline(paragraph.join(' '))));
    paragraph = [];
  };
  for (let i = 0; i < lines.length; i += 1) {
    const line = lines[i];
    const fence = line.match(/^\s*```\s*([\w+-]*)\s*$/);
    if (fence) {
      flush(); list = null;
      const code = [];
      for (i += 1; i < lines.length && !/^\s*```\s*$/.test(lines[i]); i += 1) code.push(lines[i]);
      root.append(el('pre', {}, el('code', { 'data-lang': fence[1] || undefined }, code.join('\n'))));
      continue;
    }
    const heading = line.match(/^(#{1,3})\s+(.*)$/);
    const item = line.match(/^\s*(?:[-*]|(\d+)\.)\s+(.*)$/);
    if (heading) { flush(); list = null; root.append(el(`h${heading[1].length}`, {}, ...inline(heading[2]))); }
    else if (item) {
      flush();
      const kind = item[1] ? 'ol' : 'ul';
      if (!list || list.tagName.toLowerCase() !== kind) root.append(list = el(kind));
      list.append(el('li', {}, ...inline(item[2])));
    } else if (!line.trim()) { flush(); list = null; }
    else { list = null; paragraph.push(line.trim()); }
  }
  flush();
  return root;
}

function inline(text) {
  const nodes = [];
  const pattern = /`([^`]+)`|\*\*([^*]+)\*\*|\*([^*\s][^*]*)\*|\[([^\]]+)\]\((https?:\/\/[^\s)]+)\)/g;
  let at = 0;
  for (const match of text.matchAll(pattern)) {
    if (match.index > at) nodes.push(text.slice(at, match.index));
    if (match[1] !== undefined) nodes.push(el('code', {}, match[1]));
    else if (match[2] !== undefined) nodes.push(el('strong', {}, match[2]));
    else if (match[3] !== undefined) nodes.push(el('em', {}, match[3]));
    else nodes.push(el('a', { href: match[5], rel: 'noopener noreferrer', target: '_blank' }, match[4]));
    at = match.index + match[0].length;
  }
  if (at < text.length) nodes.push(text.slice(at));
  return nodes;
}

/** The render hint sent beside a client call, if any. */
const hintOf = (message, part) =>
  message.parts.find((p) => p.type === 'data-render' && p.data?.toolCallId === part.toolCallId)?.data.render;
/** The child agent a `data-*` part names for a call (a tree's question), if any. */
const askingAgentOf = (message, part) => {
  const named = message.parts.find((p) => p.type.startsWith('data-') && p.type !== 'data-render' &&
    p.data?.toolCallId === part.toolCallId && (p.data.agentType || p.data.agent));
  return named ? String(named.data.agentType ?? named.data.agent) : null;
};
const humanName = (name) => name.replaceAll('_', ' ').replace(/^./, (c) => c.toUpperCase());
const pretty = (value) => (typeof value === 'string' ? value : JSON.stringify(value, null, 2));

/** What a part's state means, in a sentence (`stopped`: its run was stopped). */
function stateSentence(part, stopped) {
  const open = part.state === 'input-streaming' || part.state === 'input-available';
  if (stopped && open) return 'Stopped';
  switch (part.state) {
    case 'input-streaming': return 'Preparing…';
    case 'input-available': return part.providerExecuted ? 'Working on it…' : 'Waiting for your answer';
    case 'approval-requested': return 'Needs your approval';
    case 'approval-responded': return part.approval?.approved ? 'Approved' : 'Denied';
    case 'output-available': return 'Done';
    case 'output-error': return `Failed: ${part.errorText ?? 'an error'}`;
    case 'output-denied': return 'Denied';
    default: return part.state ?? '';
  }
}

/** A call's input in a line: `key: value` pairs of an object, else its JSON. */
function summaryOf(input) {
  if (typeof input === 'string') return input;
  if (input && typeof input === 'object' && !Array.isArray(input)) {
    const pairs = Object.entries(input).map(([key, value]) => `${humanName(key).toLowerCase()}: ${typeof value === 'string' ? value : JSON.stringify(value)}`);
    if (pairs.length) return pairs.join(' · ');
  }
  return JSON.stringify(input ?? null);
}

/** The question a call asks, when its input says it in words. */
function questionOf(part) {
  const input = part.input;
  if (typeof input === 'string') return input;
  for (const key of ['question', 'prompt', 'message', 'title']) {
    if (typeof input?.[key] === 'string') return input[key];
  }
  return null;
}

/** What a person typed into an open form, by call and field: a render (each chunk of the
 * stream makes one) rebuilds the form with it, so typing while the last chunks arrive loses
 * nothing. */
const drafts = new Map();

/** The widget of an open client call, from its hint; a call the page cannot render is settled
 * with an error at once, so the run never hangs on it. */
function widget(message, part) {
  const hint = hintOf(message, part);
  const name = toolName(part);
  const cancel = el('button', { type: 'button', 'data-testid': `cancel-${name}`, onclick: () => addToolError(part, 'cancelled by the user') }, 'Cancel');
  if (hint?.kind === 'elicitation') {
    const schema = hint.outputSchema ?? { type: 'string' };
    const fields = schema.type === 'object' ? Object.keys(schema.properties ?? {}) : [null];
    const typeOf = (field) => (field ? schema.properties?.[field]?.type : schema.type);
    const inputs = fields.map((field) => {
      const draft = `${part.toolCallId}:${field ?? ''}`;
      const checkbox = typeOf(field) === 'boolean';
      const input = el('input', {
        'data-testid': `field-${name}${field ? `-${field}` : ''}`, placeholder: field ? humanName(field) : 'Your answer',
        'aria-label': field ? humanName(field) : 'Your answer', ...(checkbox ? { type: 'checkbox' } : {}),
        oninput: () => drafts.set(draft, checkbox ? input.checked : input.value),
      });
      if (checkbox) input.checked = drafts.get(draft) ?? false;
      else input.value = drafts.get(draft) ?? '';
      return input;
    });
    // A field's value in its schema's type: a checkbox's state, a number typed as text.
    const valueOf = (input, field) => {
      const type = typeOf(field);
      if (type === 'boolean') return input.checked;
      if ((type === 'number' || type === 'integer') && input.value.trim() !== '' && !Number.isNaN(Number(input.value))) return Number(input.value);
      return input.value;
    };
    return el('form', { class: 'widget', 'data-testid': `widget-${name}`, onsubmit: (event) => {
      event.preventDefault();
      const values = inputs.map((input, i) => valueOf(input, fields[i]));
      addToolOutput(part, fields[0] === null ? values[0] : Object.fromEntries(fields.map((f, i) => [f, values[i]])));
    } }, ...inputs, el('button', { class: 'yes', 'data-testid': `submit-${name}` }, 'Answer'), cancel);
  }
  if (hint?.kind === 'confirm') {
    return el('div', { class: 'widget', 'data-testid': `widget-${name}` },
      el('button', { type: 'button', class: 'yes', onclick: () => addToolOutput(part, true) }, 'Yes'),
      el('button', { type: 'button', onclick: () => addToolOutput(part, false) }, 'No'));
  }
  if (hint?.kind === 'connect') {
    return el('div', { class: 'widget', 'data-testid': `widget-${name}` },
      el('button', { type: 'button', class: 'yes', onclick: () => addToolOutput(part, { connected: true }) }, 'Connect'), cancel);
  }
  // While the response streams, the hint (or the approval request of a gated call) may still
  // come; once it has ended, a call without a hint is one this page cannot render.
  if (busy()) return el('span', {}, '…');
  queueMicrotask(() => part.state === 'input-available' &&
    settle(part, { state: 'output-error', errorText: `this page cannot render the tool ${name}` }, true));
  return el('span', {}, 'This page cannot show this tool.');
}

/** The `data-*` parts the chat route uses itself: not the app's data. */
const OWN_DATA = ['data-render', 'data-subagent-call', 'data-step-discarded', 'data-answers', 'data-resume-rejected'];
const isAppData = (part) => part.type.startsWith('data-') && !OWN_DATA.includes(part.type) && !part.type.startsWith('data-baton');

/** A tool's kept data: its name, its top-level fields in a line, the raw JSON folded away. */
function dataCard(part) {
  const name = part.type.slice('data-'.length);
  const data = part.data;
  const fields = data && typeof data === 'object' && !Array.isArray(data)
    ? Object.entries(data).filter(([, v]) => v === null || typeof v !== 'object').map(([k, v]) => `${humanName(k)}: ${v}`).join(' · ')
    : String(data);
  return el('div', { class: 'card data', 'data-testid': `data-${name}` },
    el('div', { class: 'head' }, el('span', { class: 'title' }, humanName(name)), el('span', { class: 'fields' }, fields)),
    el('details', { 'data-testid': 'raw' }, el('summary', {}, 'Data'), el('pre', {}, pretty(data))));
}

/** The line under an assistant message: its model, its tokens and when it finished. */
function metaLine(metadata) {
  if (!metadata) return '';
  const bits = [];
  if (metadata.models?.length) bits.push(metadata.models.join(', '));
  const usage = metadata.usage;
  if (usage) bits.push(`${(usage.inputTokens ?? 0) + (usage.outputTokens ?? 0)} tokens`);
  const at = metadata.finishedAt ?? metadata.createdAt;
  if (at) bits.push(new Date(at).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' }));
  return bits.join(' · ');
}

/** A tool's title: a sub-agent call names its agent. */
const titleOf = (name) => (name.startsWith('subagent__') ? `Sub-agent: ${humanName(name.slice('subagent__'.length))}` : humanName(name));

/** What the person sent for a call, as they sent it (none for a server's call). */
function sentAnswer(part) {
  if (part.providerExecuted) return null;
  if (part.state === 'output-available') return `You answered: ${summaryOf(part.output)}`;
  if (part.state === 'output-error') return `You declined: ${part.errorText ?? ''}`;
  if (part.state === 'approval-responded') return part.approval?.approved ? 'You approved it.' : 'You denied it.';
  if (part.state === 'output-denied') return 'You denied it.';
  return null;
}

function card(message, part) {
  const name = toolName(part);
  const child = askingAgentOf(message, part);
  const subAgent = name.startsWith('subagent__');
  const sentence = subAgent && part.state === 'output-available' ? 'Finished'
    : stateSentence(part, status === 'stopped' && message === last());
  const node = el('div', { class: `card${subAgent ? ' subagent' : ''}`, 'data-testid': `tool-${name}`, 'data-state': part.state },
    el('div', { class: 'head' },
      el('span', { class: 'title' }, titleOf(name)),
      ...(child ? [el('span', { class: 'agent', 'data-testid': 'asking-agent' }, `asked by ${child}`)] : []),
      el('span', { class: 'state' }, sentence)));
  const body = el('div', { class: 'body' });
  const sent = sentAnswer(part);
  if (sent) body.append(el('p', { class: 'sent', 'data-testid': 'answer-as-sent' }, sent));
  if (subAgent && part.state === 'output-available' && typeof part.output === 'string') {
    body.append(el('p', { class: 'sent', 'data-testid': 'subagent-answer' }, part.output));
  }
  const question = questionOf(part);
  if (question && asksPerson(part)) body.append(el('p', { class: 'question' }, question));
  else if (part.state === 'approval-requested') body.append(el('p', { class: 'question' }, `With ${summaryOf(part.input)}`));
  const own = message === last() && !['stopped', 'stopping'].includes(status);
  if (own && !part.providerExecuted && part.state === 'input-available') body.append(widget(message, part));
  if (own && !part.providerExecuted && part.state === 'approval-requested') {
    body.append(el('div', { class: 'widget' },
      el('button', { type: 'button', class: 'yes', 'data-testid': `approve-${name}`, onclick: () => addToolApprovalResponse(part, true) }, 'Approve'),
      el('button', { type: 'button', 'data-testid': `deny-${name}`, onclick: () => addToolApprovalResponse(part, false) }, 'Deny')));
  }
  if (body.childNodes.length) node.append(body);
  const raw = [el('summary', {}, 'Details'), el('pre', {}, `input: ${pretty(part.input)}`)];
  if (part.output !== undefined) raw.push(el('pre', {}, `output: ${pretty(part.output)}`));
  node.append(el('details', { 'data-testid': 'raw' }, ...raw));
  return node;
}

/** A file of a user message: an image shown small, any other file by its name. */
function fileChip(part) {
  if (part.mediaType?.startsWith('image/') && part.url?.startsWith('data:')) {
    return el('img', { class: 'attachment', src: part.url, alt: part.filename ?? 'image', 'data-testid': 'attachment' });
  }
  return el('span', { class: 'file', 'data-testid': 'attachment' }, `File: ${part.filename ?? part.mediaType ?? 'file'}`);
}

/** The files picked for the next message, each removable. */
function renderAttached() {
  $('attached').replaceChildren(...attached.map((part, index) => el('span', { class: 'file', 'data-testid': 'attached' },
    part.filename ?? part.mediaType,
    el('button', { type: 'button', class: 'link', 'aria-label': 'Remove', onclick: () => { attached.splice(index, 1); renderAttached(); } }, '×'))));
}

/** Reads picked files as file parts (`data:` URLs), the media types the route takes. */
async function attach(files) {
  const read = (file) => new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve({ type: 'file', mediaType: file.type, filename: file.name, url: reader.result });
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
  for (const file of files) {
    if (!ACCEPTED.includes(file.type)) { error = `${file.name}: only images and PDFs can be attached`; status = 'error'; render(); continue; }
    attached.push(await read(file));
  }
  renderAttached();
}
const ACCEPTED = ['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'application/pdf'];

/** The state line: what the chat is doing, in a sentence. */
function stateLine() {
  if (status === 'error' || status === 'halted') return [status, error];
  if (status === 'submitted') return ['submitted', 'Sending…'];
  if (status === 'streaming') return ['streaming', 'Thinking…'];
  if (status === 'stopping') return ['stopping', 'Stopping…'];
  if (status === 'stopped') return ['stopped', 'Stopped. Send a message to go on.'];
  if (widgetOpen()) return ['waiting', 'Waiting for you: answer above to continue.'];
  return ['ready', messages.length ? 'Done. Ask anything else.' : 'Ask anything to start.'];
}

function render() {
  const log = $('log');
  // The field a person is typing in keeps the focus across the rebuild.
  const focused = log.contains(document.activeElement) ? document.activeElement.dataset.testid : null;
  log.replaceChildren(...messages.map((message) => {
    const box = el('div', { class: `msg ${message.role}`, 'data-testid': `message-${message.role}` });
    // Text a retried model call discarded is hidden: it never reached the log.
    const discarded = new Set(message.parts.filter((p) => p.type === 'data-step-discarded').flatMap((p) => p.data?.textIds ?? []));
    for (const part of message.parts) {
      if ((part.type === 'text' || part.type === 'reasoning') && discarded.has(part.textId)) continue;
      // The model's reasoning, folded away as plain text (never as markup).
      if (part.type === 'reasoning') box.append(el('details', { class: 'reasoning', 'data-testid': 'reasoning' }, el('summary', {}, 'Thinking'), el('div', {}, part.text)));
      if (part.type === 'text') box.append(message.role === 'user' ? el('div', { 'data-testid': 'text' }, part.text) : markdown(part.text));
      else if (part.type === 'file') box.append(fileChip(part));
      else if (isTool(part)) box.append(card(message, part));
      else if (isAppData(part)) box.append(dataCard(part));
    }
    const meta = message.role === 'assistant' && metaLine(message.metadata);
    if (meta) box.append(el('div', { class: 'meta', 'data-testid': 'meta' }, meta));
    const idle = !busy() && !widgetOpen();
    // Edit a user message (the chat's first too: the chat restarts from it), and regenerate
    // the last answer.
    if (idle && message.role === 'user' && !editing) {
      box.append(el('button', { type: 'button', class: 'link', 'data-testid': 'edit', onclick: () => startEdit(message) }, 'Edit'));
    }
    if (idle && message.role === 'assistant' && message === last()) {
      box.append(el('button', { type: 'button', class: 'link', 'data-testid': 'regenerate', onclick: regenerate }, 'Regenerate'));
    }
    return box;
  }), ...held.map((text) => el('div', { class: 'msg user held', 'data-testid': 'held' }, `${text} (sent once you answer)`)));
  if (focused) log.querySelector(`[data-testid="${CSS.escape(focused)}"]`)?.focus();
  $('editing').hidden = !editing;
  const [state, sentence] = stateLine();
  const line = $('status');
  line.textContent = sentence;
  line.dataset.state = state;
  document.body.classList.toggle('busy', busy());
  renderChats();
}

function renderChats() {
  const list = $('chats');
  const when = (ms) => new Date(ms).toLocaleString([], { dateStyle: 'short', timeStyle: 'short' });
  const words = { active: 'working', suspended_client_tool: 'waiting for you', completed: 'done', failed: 'failed', interrupted: 'stopped' };
  if (!chats.length) { list.replaceChildren(el('li', { class: 'empty' }, 'No chats yet.')); return; }
  list.replaceChildren(...chats.map((chat) => el('li', { class: chat.sessionId === chatId ? 'current' : undefined },
    el('button', { type: 'button', class: 'open', 'data-testid': `chat-${chat.sessionId}`, onclick: () => open(chat.sessionId) },
      el('span', { class: 'title', 'data-testid': 'chat-title' }, titles.get(chat.sessionId) ?? humanName(chat.agentType)),
      el('span', { class: 'when' }, `${humanName(chat.agentType)} · ${words[chat.status] ?? chat.status} · ${when(chat.updatedAt)}`)),
    el('button', { type: 'button', class: 'delete', title: 'Delete this chat', 'aria-label': 'Delete this chat',
      'data-testid': `delete-${chat.sessionId}`, onclick: () => removeChat(chat) }, '×'))));
}

/** Deletes a chat, once confirmed: a running one is stopped first (the server refuses to delete
 * a chat a run works on); the chat leaves the list, and the page shows a new one if it was open. */
async function removeChat(chat) {
  const title = titles.get(chat.sessionId) ?? humanName(chat.agentType);
  if (!confirm(`Delete the chat "${title}"? Its messages are gone for good.`)) return;
  if (chat.sessionId === chatId && busy()) await stop();
  let answer = await fetch(`${api}/${chat.sessionId}`, { method: 'DELETE', headers: headers() });
  if (answer.status === 409) {
    // A run still works on it (one this page did not start): stop it, then delete.
    await fetch(`${api}/${chat.sessionId}/stop`, { method: 'POST', headers: headers() });
    answer = await fetch(`${api}/${chat.sessionId}`, { method: 'DELETE', headers: headers() });
  }
  if (!answer.ok && answer.status !== 404) {
    error = await refusal(answer);
    status = 'error';
    render();
    return;
  }
  titles.delete(chat.sessionId);
  saveTitles();
  chats = chats.filter((c) => c.sessionId !== chat.sessionId);
  if (chat.sessionId === chatId) await open(freshId());
  else renderChats();
  refreshChats();
}

async function refreshChats(tries = 5) {
  const query = token ? '' : `&userId=${encodeURIComponent(userId)}`;
  const answer = await fetch(`${location.origin}/sessions?limit=30${query}`, { headers: headers() });
  if (!answer.ok) return;
  chats = (await answer.json()).sessions;
  // The list is the search index, which follows a change some tens of ms after it: a chat just
  // started may not be in it yet, so look again shortly (a few times, for a chat deleted meanwhile).
  if (chatId && tries > 1 && !chats.some((chat) => chat.sessionId === chatId)) {
    setTimeout(() => refreshChats(tries - 1), 250);
  }
  renderChats();
  // The chats this browser has no title for: their first message, from their snapshots.
  for (const chat of chats.filter((c) => !titles.has(c.sessionId)).slice(0, 10)) {
    const snapshot = await fetch(`${api}/${chat.sessionId}/snapshot`, { headers: headers() });
    if (!snapshot.ok) continue;
    const first = (await snapshot.json()).messages.find((m) => m.role === 'user');
    keepTitle(chat.sessionId, first?.parts.filter((p) => p.type === 'text').map((p) => p.text).join(''));
  }
  renderChats();
}

/** Shows the chat `id`: its snapshot, and the turn still running if one is. */
async function open(id) {
  if (busy()) controller?.abort();
  chatId = id;
  history.replaceState(null, '', `${location.pathname}${location.search}#${id}`);
  messages = [];
  held = [];
  editing = null;
  attached = [];
  renderAttached();
  status = 'ready';
  error = null;
  $('about').textContent = `${agent} · ${userId}`;
  render();
  const snapshot = await fetch(`${api}/${id}/snapshot`, { headers: headers() });
  if (snapshot.ok) {
    const body = await snapshot.json();
    messages = body.messages;
    const first = messages.find((m) => m.role === 'user');
    keepTitle(id, first?.parts.filter((p) => p.type === 'text').map((p) => p.text).join(''));
    if (body.status === 'interrupted') status = 'stopped';
    render();
    if (body.streaming) await request('resume-stream', { url: `${api}/${id}/stream` });
  } else if (snapshot.status !== 404) {
    status = 'error';
    error = await refusal(snapshot);
    render();
  }
}

$('composer').addEventListener('submit', (event) => {
  event.preventDefault();
  const input = $('text');
  if (input.value.trim()) send(input.value.trim());
  input.value = '';
});
$('stop').addEventListener('click', stop);
$('files').addEventListener('change', (event) => { attach([...event.target.files]).catch((e) => { error = String(e); render(); }); event.target.value = ''; });
$('attach').addEventListener('click', () => $('files').click());
$('cancel-edit').addEventListener('click', () => { editing = null; $('text').value = ''; render(); });
$('new-chat').addEventListener('click', () => open(freshId()));

// The demo mode's token (absent from `batond server`, and none on an open server).
const demo = await fetch(`${api}/demo-token`, { method: 'POST' });
if (demo.ok) ({ token, userId } = await demo.json());
await open(location.hash.slice(1) || freshId());
refreshChats();
