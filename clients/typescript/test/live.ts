// The client against a live batond (run by tests/tests/e2e/typescript.rs): start, follow to a
// client call, answer it, resume and follow to the end; an approval the same way; a refusal read
// by its code. Prints one JSON summary line.

import { Baton, BatonError, type StreamChunk } from '../src/index.js';

const [baseUrl, token] = process.argv.slice(2);
const baton = new Baton({ baseUrl, token });

async function until(sessionId: string, from: number, kind: string): Promise<StreamChunk[]> {
  const seen: StreamChunk[] = [];
  for await (const chunk of baton.follow(sessionId, from)) {
    seen.push(chunk);
    if (chunk.type === kind) break;
  }
  return seen;
}

const last = (chunks: StreamChunk[]) => (chunks[chunks.length - 1] as { sequence: number }).sequence;

// A client call, answered.
const asked = await baton.start({ agent: 'asker_only', message: 'go' });
const suspended = await until(asked.sessionId, 0, 'suspended');
const waiting = await baton.status(asked.sessionId);
const call = waiting.pending?.[0];
const stored = await baton.submit({
  kind: 'client-tool-result',
  sessionId: asked.sessionId,
  toolCallId: call?.toolCallId ?? '',
  result: { answer: 'Ann' },
});
await baton.resume({ sessionId: asked.sessionId, mode: 'continue' });
const ended = await until(asked.sessionId, last(suspended), 'end');
const end = ended[ended.length - 1] as { type: string; status?: string; output?: string };

// An approval, approved.
const guarded = await baton.start({ agent: 'guarded', message: 'pay' });
const paused = await until(guarded.sessionId, 0, 'suspended');
const approval = (await baton.status(guarded.sessionId)).pending?.[0];
await baton.submit({
  kind: 'approval-response',
  sessionId: guarded.sessionId,
  toolCallId: approval?.toolCallId ?? '',
  approvalId: approval?.approvalId ?? '',
  approved: true,
});
await baton.resume({ sessionId: guarded.sessionId, mode: 'continue' });
const approved = await until(guarded.sessionId, last(paused), 'end');
const approvedEnd = approved[approved.length - 1] as { status?: string; output?: string };

// A refusal, by its code.
let refused: { code: string; status: number; retryable: boolean } | null = null;
try {
  await baton.status('no-such-session');
} catch (error) {
  if (error instanceof BatonError) {
    refused = { code: error.code, status: error.status, retryable: error.retryable };
  }
}

// A finished session, deleted: then gone.
const deleted = await baton.delete(asked.sessionId);
let afterDelete: string | null = null;
try {
  await baton.status(asked.sessionId);
} catch (error) {
  if (error instanceof BatonError) afterDelete = error.code;
}

console.log(JSON.stringify({
  pendingKind: call?.kind,
  submitted: stored.status,
  continuation: stored.continuation.kind,
  end: { status: end.status, output: end.output },
  approval: approval?.kind,
  approvedEnd: { status: approvedEnd.status, output: approvedEnd.output },
  refused,
  deleted: deleted.deletedSessions,
  afterDelete,
}));
