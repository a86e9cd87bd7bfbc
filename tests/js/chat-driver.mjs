// Drives the real AbstractChat of the `ai` package against batond's chat route, as a stock
// useChat app would, and prints one JSON summary line for the Rust end-to-end test to assert on.
//
//   node chat-driver.mjs <ai-6.0.0 | ai-latest> <server base URL> <scenario>
//
// The chat's state clones a message on every replace, as @ai-sdk/react's ChatState does: a
// response that only pushes a step-start part never reaches the messages the predicates read.
// Every POST body is recorded; the summary says whether any request was sent twice.

const [aiPackage, base, scenario] = process.argv.slice(2);
const ai = await import(aiPackage);
const {
  AbstractChat,
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithToolCalls: toolCallsDone,
  lastAssistantMessageIsCompleteWithApprovalResponses: approvalsDone,
} = ai;

/** The state of @ai-sdk/react's Chat: immutable arrays, each replaced message cloned. */
class ReactLikeState {
  constructor(messages = []) {
    this.messages = messages;
    this.status = 'ready';
    this.error = undefined;
  }
  pushMessage = (message) => {
    this.messages = this.messages.concat(message);
  };
  popMessage = () => {
    this.messages = this.messages.slice(0, -1);
  };
  replaceMessage = (index, message) => {
    this.messages = [
      ...this.messages.slice(0, index),
      this.snapshot(message),
      ...this.messages.slice(index + 1),
    ];
  };
  snapshot = (value) => structuredClone(value);
}

const posts = [];
const errors = [];

/** A chat of `agent` on chat id `id`, with its own POST count. */
function chat({ id, agent, predicate, messages, headers = {}, onData, onResponse }) {
  const own = { posts: 0 };
  const transport = new DefaultChatTransport({
    api: `${base}/chat`,
    body: { agent },
    headers: { Authorization: 'Bearer test', ...headers },
    fetch: async (url, init) => {
      if (init?.method === 'POST') {
        posts.push(init.body);
        own.posts += 1;
      }
      const response = await fetch(url, init);
      if (init?.method === 'POST') onResponse?.(response.status);
      return response;
    },
  });
  const instance = new (class extends AbstractChat {})({
    id,
    transport,
    state: new ReactLikeState(messages),
    sendAutomaticallyWhen: predicate,
    onError: (error) => errors.push(String(error.message ?? error)),
    onData,
  });
  instance.own = own;
  return instance;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until no request is in flight and no new POST came for a while (an auto-send loop
 * would keep posting; more than 20 POSTs fails at once). */
async function settled(instance) {
  let seen = -1;
  let quietSince = Date.now();
  const stuckAt = Date.now() + 60_000;
  for (;;) {
    await sleep(25);
    if (Date.now() > stuckAt) throw new Error(`stuck ${instance.status}: ${JSON.stringify(last(instance))}`);
    const busy = instance.status === 'submitted' || instance.status === 'streaming';
    if (busy || posts.length !== seen) {
      seen = posts.length;
      quietSince = Date.now();
    } else if (Date.now() - quietSince > 400) {
      return;
    }
    if (posts.length > 20) throw new Error(`runaway: ${posts.length} POSTs`);
  }
}

const last = (instance) => instance.messages[instance.messages.length - 1];
const toolParts = (message) =>
  message.parts.filter((p) => p.type.startsWith('tool-') || p.type === 'dynamic-tool');
const text = (message) =>
  message.parts
    .filter((p) => p.type === 'text')
    .map((p) => p.text)
    .join('');
const part = (instance, state) => {
  const found = toolParts(last(instance)).find((p) => p.state === state);
  if (!found) throw new Error(`no ${state} part in ${JSON.stringify(last(instance))}`);
  return found;
};
/** The first tool part in `state` a person answers (a client call or an approval: never a
 * server-executed part, such as a sub-agent call). */
const asked = (instance, state) => {
  const found = toolParts(last(instance)).find((p) => p.state === state && !p.providerExecuted);
  if (!found) throw new Error(`no unflagged ${state} part in ${JSON.stringify(last(instance))}`);
  return found;
};
/** The owners the message names beside a descendant's calls (`data-subagent-call` parts). */
const owners = (instance) =>
  last(instance)
    .parts.filter((p) => p.type === 'data-subagent-call')
    .map((p) => p.data);
const newId = () => crypto.randomUUID().replaceAll('-', '');
const either = (options) => toolCallsDone(options) || approvalsDone(options);

/** Answers the MCP question part a chat waits on (`{ok: true}`): what it showed, and how many
 * POSTs the answer took. */
async function answerMcpQuestion(c) {
  const call = asked(c, 'input-available');
  const render = last(c).parts.find((p) => p.type === 'data-render' && p.data?.toolCallId === call.toolCallId);
  const question = summary(c, { owners: owners(c), type: call.type, input: call.input, render: render?.data?.render ?? null });
  const before = c.own.posts;
  await c.addToolOutput({ tool: 'question', toolCallId: call.toolCallId, output: { ok: true } });
  await settled(c);
  return summary(c, { question, answerPosts: c.own.posts - before });
}

async function snapshot(id) {
  const response = await fetch(`${base}/chat/${id}/snapshot`, {
    headers: { Authorization: 'Bearer test' },
  });
  if (!response.ok) throw new Error(`snapshot: ${response.status} ${await response.text()}`);
  return (await response.json()).messages;
}

/** A message as the assertions compare it: each part's type, text, data, state and output, and
 * the message's metadata. */
const shape = (message) => ({
  parts: message.parts.map((p) => ({
    type: p.type,
    ...(p.text !== undefined && { text: p.text }),
    ...(p.data !== undefined && { data: p.data }),
    ...(p.state !== undefined && { state: p.state }),
    ...(p.output !== undefined && { output: p.output }),
  })),
  metadata: message.metadata ?? null,
});

/** The live last message and the snapshot's, shaped alike. */
async function liveAndReloaded(instance, id) {
  return { live: shape(last(instance)), reloadedMessage: shape((await snapshot(id)).at(-1)) };
}

/** Two turns (`hello`, `more`), then the message at `index` edited to `text`: the summary, with
 * the one before the edit and the snapshot's texts after it. */
async function editAt(index, text) {
  const id = newId();
  const c = chat({ id, agent: 'chatter' });
  await c.sendMessage({ text: 'hello' });
  await settled(c);
  await c.sendMessage({ text: 'more' });
  await settled(c);
  const before = summary(c);
  await c.sendMessage({ text, messageId: c.messages[index].id });
  await settled(c);
  const snapshot = await snapshotOf(id);
  const texts = snapshot.messages.map((m) => m.parts.filter((p) => p.type === 'text').map((p) => p.text).join(''));
  return summary(c, { before, snapshotTexts: texts });
}

async function snapshotOf(id) {
  const response = await fetch(`${base}/chat/${id}/snapshot`, {
    headers: { Authorization: 'Bearer test' },
  });
  return response.json();
}

async function stopOnServer(id) {
  const response = await fetch(`${base}/chat/${id}/stop`, {
    method: 'POST',
    headers: { Authorization: 'Bearer test' },
  });
  return response.json();
}

/** A `mixed` chat reloaded from the snapshot with `predicate`: the client call answered, then
 * the approval approved, counting the POSTs after each. */
async function reloadWith(predicate) {
  const id = newId();
  const live = chat({ id, agent: 'mixed', predicate });
  await live.sendMessage({ text: 'mixed' });
  await settled(live);
  const c = chat({ id, agent: 'mixed', predicate, messages: await snapshot(id) });
  const reloaded = summary(c);
  await c.addToolOutput({
    tool: 'ask_user',
    toolCallId: part(c, 'input-available').toolCallId,
    output: { answer: 'yes' },
  });
  await settled(c);
  const afterClient = c.own.posts;
  await c.addToolApprovalResponse({ id: part(c, 'approval-requested').approval.id, approved: true });
  await settled(c);
  return summary(c, { reloaded, postsAfterClientAnswer: afterClient });
}

function summary(instance, extra = {}) {
  const message = last(instance);
  return {
    status: instance.status,
    error: instance.error ? String(instance.error.message ?? instance.error) : null,
    ownPosts: instance.own.posts,
    lastRole: message?.role,
    lastText: message ? text(message) : '',
    lastParts: message ? message.parts.map((p) => (p.state ? `${p.type}:${p.state}` : p.type)) : [],
    messageCount: instance.messages.length,
    ...extra,
  };
}

const scenarios = {
  async text() {
    const c = chat({ id: newId(), agent: 'chatter' });
    await c.sendMessage({ text: 'hello' });
    await settled(c);
    return summary(c);
  },

  async client_tool() {
    const c = chat({ id: newId(), agent: 'asker_only', predicate: toolCallsDone });
    await c.sendMessage({ text: 'hi' });
    await settled(c);
    const call = part(c, 'input-available');
    const suspended = summary(c);
    await c.addToolOutput({ tool: 'ask_user', toolCallId: call.toolCallId, output: { answer: 'Ada' } });
    await settled(c);
    return summary(c, { suspended });
  },

  async approve() {
    return approval(true);
  },

  async deny() {
    return approval(false);
  },

  async batch() {
    const c = chat({ id: newId(), agent: 'asker_twice', predicate: toolCallsDone });
    await c.sendMessage({ text: 'two questions' });
    await settled(c);
    const [first, second] = toolParts(last(c));
    await c.addToolOutput({ tool: 'ask_user', toolCallId: first.toolCallId, output: { answer: 'one' } });
    await settled(c);
    const afterOne = posts.length;
    await c.addToolOutput({ tool: 'ask_user', toolCallId: second.toolCallId, output: { answer: 'two' } });
    await settled(c);
    return summary(c, { postsAfterFirstAnswer: afterOne });
  },

  async mixed() {
    const c = chat({ id: newId(), agent: 'mixed', predicate: either });
    await c.sendMessage({ text: 'mixed' });
    await settled(c);
    const client = part(c, 'input-available');
    const gated = part(c, 'approval-requested');
    await c.addToolOutput({ tool: 'ask_user', toolCallId: client.toolCallId, output: { answer: 'yes' } });
    await settled(c);
    const afterClient = posts.length;
    await c.addToolApprovalResponse({ id: gated.approval.id, approved: true });
    await settled(c);
    return summary(c, { postsAfterClientAnswer: afterClient });
  },

  async resend() {
    const id = newId();
    const first = chat({ id, agent: 'asker_only', predicate: toolCallsDone });
    await first.sendMessage({ text: 'hi' });
    await settled(first);
    const second = chat({ id, agent: 'asker_only', predicate: toolCallsDone, messages: await snapshot(id) });
    const call = part(first, 'input-available');
    await first.addToolOutput({ tool: 'ask_user', toolCallId: call.toolCallId, output: { answer: 'Ada' } });
    await settled(first);
    await second.addToolOutput({ tool: 'ask_user', toolCallId: call.toolCallId, output: { answer: 'Ada' } });
    await settled(second);
    return summary(second, { first: summary(first) });
  },

  async case_c() {
    const id = newId();
    const c = chat({ id, agent: 'mixed', predicate: either });
    await c.sendMessage({ text: 'mixed' });
    await settled(c);
    const client = part(c, 'input-available');
    const gated = part(c, 'approval-requested');
    // The approval answered with an id another run issued: not stored, while the client's
    // answer beside it is.
    c.messages = c.messages.map((m, i) =>
      i < c.messages.length - 1
        ? m
        : {
            ...m,
            parts: m.parts.map((p) =>
              p.toolCallId === gated.toolCallId
                ? { ...p, state: 'approval-responded', approval: { id: `elsewhere::${p.toolCallId}`, approved: true } }
                : p,
            ),
          },
    );
    await c.addToolOutput({ tool: 'ask_user', toolCallId: client.toolCallId, output: { answer: 'yes' } });
    await settled(c);
    const refused = summary(c);
    // The app re-reads the snapshot and answers what is still awaited.
    const again = chat({ id, agent: 'mixed', predicate: either, messages: await snapshot(id) });
    const reloaded = summary(again);
    await again.addToolApprovalResponse({ id: part(again, 'approval-requested').approval.id, approved: true });
    await settled(again);
    return summary(again, { refused, reloaded });
  },

  reload: () => reloadWith(approvalsDone),
  reload_either: () => reloadWith(either),
  reload_tool_calls: () => reloadWith(toolCallsDone),

  async tree_grandchild() {
    const c = chat({ id: newId(), agent: 'top', predicate: toolCallsDone });
    await c.sendMessage({ text: 'go' });
    await settled(c);
    const call = asked(c, 'input-available');
    const suspended = summary(c, { owners: owners(c), metadata: call.callProviderMetadata ?? null });
    const before = c.own.posts;
    await c.addToolOutput({ tool: 'ask_user', toolCallId: call.toolCallId, output: { answer: 'deep' } });
    await settled(c);
    return summary(c, { suspended, answerPosts: c.own.posts - before });
  },

  // A child that asks again once its first answer resumed it: the continuation ends with the
  // second question (the root's stream says the tree waits again), answered to the end.
  async mcp_question() {
    const c = chat({ id: newId(), agent: 'mcp_tree_root', predicate: toolCallsDone });
    await c.sendMessage({ text: 'go' });
    await settled(c);
    return answerMcpQuestion(c);
  },

  // `mcp_question` with a reload while the question waits: the snapshot's part is the live one.
  async mcp_question_reload() {
    const id = newId();
    const live = chat({ id, agent: 'mcp_tree_root', predicate: toolCallsDone });
    await live.sendMessage({ text: 'go' });
    await settled(live);
    const c = chat({ id, agent: 'mcp_tree_root', predicate: toolCallsDone, messages: await snapshot(id) });
    return answerMcpQuestion(c);
  },

  async tree_asks_again() {
    const c = chat({ id: newId(), agent: 'parent_of_twice_asker', predicate: toolCallsDone });
    await c.sendMessage({ text: 'go' });
    await settled(c);
    const first = asked(c, 'input-available');
    await c.addToolOutput({ tool: 'ask_user', toolCallId: first.toolCallId, output: { answer: 'one' } });
    await settled(c);
    const second = asked(c, 'input-available');
    const again = summary(c, { owners: owners(c), first: first.toolCallId, second: second.toolCallId });
    await c.addToolOutput({ tool: 'ask_user', toolCallId: second.toolCallId, output: { answer: 'two' } });
    await settled(c);
    return summary(c, { again });
  },

  async tree_approval() {
    const c = chat({ id: newId(), agent: 'fan_out', predicate: either });
    await c.sendMessage({ text: 'go' });
    await settled(c);
    const question = asked(c, 'input-available');
    const gated = asked(c, 'approval-requested');
    const suspended = summary(c, { owners: owners(c) });
    await c.addToolOutput({ tool: 'ask_user', toolCallId: question.toolCallId, output: { answer: 'red' } });
    await settled(c);
    const afterQuestion = c.own.posts;
    await c.addToolApprovalResponse({ id: gated.approval.id, approved: true });
    await settled(c);
    return summary(c, { suspended, postsAfterQuestion: afterQuestion });
  },

  async tree_reload() {
    const id = newId();
    const live = chat({ id, agent: 'fan_out', predicate: either });
    await live.sendMessage({ text: 'go' });
    await settled(live);
    const c = chat({ id, agent: 'fan_out', predicate: either, messages: await snapshot(id) });
    const reloaded = summary(c, { owners: owners(c) });
    const question = asked(c, 'input-available');
    await c.addToolOutput({ tool: 'ask_user', toolCallId: question.toolCallId, output: { answer: 'red' } });
    await settled(c);
    const afterQuestion = c.own.posts;
    await c.addToolApprovalResponse({ id: asked(c, 'approval-requested').approval.id, approved: true });
    await settled(c);
    return summary(c, { reloaded, postsAfterQuestion: afterQuestion });
  },

  // A remote child's question, then its approval (`remote_delegator` delegating to a producer's
  // `ask_then_approve`), relayed to the consumer's root: an answer the producer refuses, a reload
  // after it, the question answered, a reload while the approval is awaited, the approval.
  async remote_relay() {
    const id = newId();
    const open = async () =>
      chat({ id, agent: 'remote_delegator', predicate: either, messages: await snapshot(id) });
    const parts = (instance, toolCallId) =>
      last(instance).parts.filter((p) => p.toolCallId === toolCallId).length;
    const c = chat({ id, agent: 'remote_delegator', predicate: either });
    await c.sendMessage({ text: 'go' });
    await settled(c);
    const question = asked(c, 'input-available');
    const suspended = summary(c, {
      owners: owners(c),
      metadata: question.callProviderMetadata ?? null,
      toolCallId: question.toolCallId,
    });
    await c.addToolOutput({ tool: 'ask_user', toolCallId: question.toolCallId, output: { wrong: 1 } });
    await settled(c);
    const refused = summary(c);
    const again = await open();
    const reloaded = summary(again, { owners: owners(again), copies: parts(again, question.toolCallId) });
    const before = again.own.posts;
    await again.addToolOutput({
      tool: 'ask_user',
      toolCallId: asked(again, 'input-available').toolCallId,
      output: { answer: 'Ada' },
    });
    await settled(again);
    const gated = asked(again, 'approval-requested');
    const approvalAsked = summary(again, {
      owners: owners(again),
      answerPosts: again.own.posts - before,
      approvalId: gated.approval.id,
      toolCallId: gated.toolCallId,
      copies: parts(again, gated.toolCallId),
    });
    const third = await open();
    const reloadedApproval = summary(third, { copies: parts(third, gated.toolCallId) });
    await third.addToolApprovalResponse({ id: asked(third, 'approval-requested').approval.id, approved: true });
    await settled(third);
    return summary(third, { chatId: id, suspended, refused, reloaded, approvalAsked, reloadedApproval });
  },

  async demo_tree() {
    const c = chat({ id: newId(), agent: 'demo_tree', predicate: toolCallsDone });
    await c.sendMessage({ text: 'plan a trip' });
    await settled(c);
    const call = asked(c, 'input-available');
    const suspended = summary(c, { owners: owners(c) });
    await c.addToolOutput({ tool: 'ask_user', toolCallId: call.toolCallId, output: 'Lisbon' });
    await settled(c);
    return summary(c, { suspended });
  },

  async message_features() {
    const id = newId();
    const c = chat({ id, agent: 'looker' });
    const png = { type: 'file', mediaType: 'image/png', filename: 'dot.png', url: 'data:image/png;base64,iVBORw0KGgo=' };
    await c.sendMessage({ text: 'look', files: [png], metadata: { lang: 'en' } });
    await settled(c);
    const first = { user: c.messages[0], text: text(last(c)), metadata: last(c).metadata ?? null };
    // A message with a file and no text is a message.
    const pdf = { type: 'file', mediaType: 'application/pdf', url: 'data:application/pdf;base64,JVBERi0xLjQ=' };
    await c.sendMessage({ files: [pdf] });
    await settled(c);
    const second = { user: c.messages[2], text: text(last(c)) };
    return summary(c, { first, second, reloaded: await snapshot(id) });
  },

  // A file over the chat's cap: refused 413 as itself, once, and the chat shows the error.
  async oversize_file() {
    const id = newId();
    const statuses = [];
    const c = chat({ id, agent: 'looker', onResponse: (status) => statuses.push(status) });
    const big = { type: 'file', mediaType: 'image/png', url: `data:image/png;base64,${'A'.repeat(4 << 20)}` };
    await c.sendMessage({ text: 'look', files: [big] });
    await settled(c);
    return summary(c, { id, httpStatus: statuses[0] ?? null });
  },

  // A model that reasons: its reasoning arrives as a reasoning part before the text.
  async reasoning() {
    const id = newId();
    const c = chat({ id, agent: 'thinker' });
    await c.sendMessage({ text: 'what is 6 × 7?' });
    await settled(c);
    const parts = last(c).parts
      .filter((p) => p.type === 'reasoning' || p.type === 'text')
      .map((p) => ({ type: p.type, text: p.text, state: p.state }));
    return summary(c, { id, parts, ...(await liveAndReloaded(c, id)) });
  },

  // A server tool's data: the kept part stays in the message, the transient one reaches onData.
  async tool_data() {
    const id = newId();
    const seen = [];
    const c = chat({ id, agent: 'forecaster', onData: (part) => seen.push(part) });
    await c.sendMessage({ text: 'weather?' });
    await settled(c);
    const kept = last(c).parts.filter((p) => p.type.startsWith('data-'));
    const output = toolParts(last(c)).map((p) => p.output);
    return summary(c, { id, kept, seen, output, ...(await liveAndReloaded(c, id)) });
  },

  // The same tool behind an approval: run once approved, its kept data still reaches the
  // message and the snapshot.
  async approved_data() {
    const id = newId();
    const seen = [];
    const c = chat({ id, agent: 'forecaster_gated', predicate: approvalsDone, onData: (part) => seen.push(part) });
    await c.sendMessage({ text: 'weather?' });
    await settled(c);
    const gated = part(c, 'approval-requested');
    await c.addToolApprovalResponse({ id: gated.approval.id, approved: true });
    await settled(c);
    const kept = last(c).parts.filter((p) => p.type.startsWith('data-'));
    return summary(c, { id, kept, seen, ...(await liveAndReloaded(c, id)) });
  },

  // An edit: sendMessage with the second user message's id replaces it (and what followed), on
  // the client as on the server, whose snapshot then holds the edited turn in its place.
  edit: () => editAt(2, 'again'),

  // An edit of the chat's first message: no checkpoint comes before it, yet it is replaced,
  // and its answer with it, as a later one is.
  edit_first: () => editAt(0, 'hi'),

  async regenerate() {
    const c = chat({ id: newId(), agent: 'chatter' });
    await c.sendMessage({ text: 'hello' });
    await settled(c);
    const before = summary(c);
    await c.regenerate();
    await settled(c);
    return summary(c, { before });
  },

  // The app's stop button: useChat's stop() aborts the response, and the same click tells the
  // server (POST /chat/{id}/stop), which interrupts the run.
  async stop() {
    const id = newId();
    const c = chat({ id, agent: 'napper' });
    const sending = c.sendMessage({ text: 'nap' });
    while (!(c.status === 'streaming' && toolParts(last(c)).length > 0)) await sleep(20);
    const runningBeforeStop = (await snapshotOf(id)).status;
    const [stopAnswer] = await Promise.all([stopOnServer(id), c.stop()]);
    await sending;
    await settled(c);
    const afterStop = await snapshotOf(id);
    const stopped = summary(c);
    // The next turn: if it naps again, stop it too, as the app's button would.
    let done = false;
    const next = c.sendMessage({ text: 'awake?' }).then(() => (done = true));
    const napping = () =>
      c.status === 'streaming' && last(c).role === 'assistant' && toolParts(last(c)).length > 0;
    while (!done && !napping()) await sleep(20);
    if (!done) await Promise.all([stopOnServer(id), c.stop()]);
    await next;
    await settled(c);
    return summary(c, { runningBeforeStop, stopAnswer, afterStop, stopped });
  },

  // The opt-in: the app's transport sends x-baton-stop-on-abort, and stop() alone (the
  // response's abort) interrupts the run.
  async stop_on_abort() {
    const id = newId();
    const c = chat({ id, agent: 'napper', headers: { 'x-baton-stop-on-abort': 'true' } });
    const sending = c.sendMessage({ text: 'nap' });
    while (!(c.status === 'streaming' && toolParts(last(c)).length > 0)) await sleep(20);
    await c.stop();
    await sending;
    let afterStop = await snapshotOf(id);
    for (let i = 0; i < 300 && afterStop.status === 'active'; i += 1) {
      await sleep(100);
      afterStop = await snapshotOf(id);
    }
    return summary(c, { afterStop });
  },

  async next_turn() {
    const c = chat({ id: newId(), agent: 'asker_only', predicate: toolCallsDone });
    await c.sendMessage({ text: 'hi' });
    await settled(c);
    await c.sendMessage({ text: 'never mind' });
    await settled(c);
    return summary(c);
  },
};

async function approval(approved) {
  const c = chat({ id: newId(), agent: 'guarded', predicate: approvalsDone });
  await c.sendMessage({ text: 'pay alice' });
  await settled(c);
  const gated = part(c, 'approval-requested');
  const suspended = summary(c);
  await c.addToolApprovalResponse({ id: gated.approval.id, approved, reason: approved ? undefined : 'no' });
  await settled(c);
  return summary(c, { suspended });
}

const run = scenarios[scenario];
if (!run) {
  console.error(`unknown scenario ${scenario}`);
  process.exit(2);
}
const result = await run();
const repeated = posts.length !== new Set(posts).size;
console.log(JSON.stringify({ scenario, ai: aiPackage, posts: posts.length, repeated, errors, ...result }));
