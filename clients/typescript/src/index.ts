// A typed client of Baton's HTTP API. The types are generated from the server's OpenAPI
// document (`npm run generate` writes src/schema.d.ts from docs/openapi.json); the calls go
// through openapi-fetch, so a path, a body or an answer that does not match the document is a
// type error. Every refusal is thrown as a BatonError carrying the envelope's code, and
// `follow` reads a session's server-sent events as typed chunks, reconnecting from the last
// sequence it saw.

import createClient, { type Client } from 'openapi-fetch';
import type { components, paths } from './schema.js';

export type { components, paths } from './schema.js';
export type Schemas = components['schemas'];
export type ErrorCode = Schemas['ErrorCode'];
export type StreamChunk = Schemas['StreamChunk'];
export type SessionState = Schemas['SessionState'];
export type PendingDetail = Schemas['PendingDetail'];
export type SubmitRequest = Schemas['SubmitRequest'];
export type SubmitAnswer = Schemas['SubmitAnswer'];

/** A refusal of the server: its error envelope, and the HTTP status it came with. */
export class BatonError extends Error {
  readonly code: ErrorCode;
  readonly retryable: boolean;
  readonly status: number;
  /** The code's own fields (e.g. `limitBytes`, `awaitedToolCallIds`), as sent. */
  readonly details: Record<string, unknown>;

  constructor(status: number, body: Partial<Schemas['ApiError']> & Record<string, unknown>) {
    super(String(body.error ?? `HTTP ${status}`));
    this.name = 'BatonError';
    this.status = status;
    this.code = (body.code ?? 'internal_error') as ErrorCode;
    this.retryable = Boolean(body.retryable);
    const { error: _error, code: _code, retryable: _retryable, ...details } = body;
    this.details = details;
  }
}

export interface BatonOptions {
  /** The server, e.g. `http://127.0.0.1:8080`. */
  baseUrl: string;
  /** An operator key, a user token or a session token. */
  token?: string;
  fetch?: typeof fetch;
}

type Answered<T> = { data?: T; error?: unknown; response: Response };

async function answer<T>(call: Promise<Answered<T>>): Promise<T> {
  const { data, error, response } = await call;
  if (!response.ok) {
    throw new BatonError(response.status, (error ?? {}) as Record<string, unknown>);
  }
  return data as T;
}

/** A client of one server with one credential. */
export class Baton {
  /** The typed openapi-fetch client, for any route (its answers are not unwrapped). */
  readonly api: Client<paths>;
  private readonly options: BatonOptions;

  constructor(options: BatonOptions) {
    this.options = options;
    this.api = createClient<paths>({
      baseUrl: options.baseUrl,
      headers: this.headers(),
      fetch: options.fetch,
    });
  }

  private headers(): Record<string, string> {
    return this.options.token ? { authorization: `Bearer ${this.options.token}` } : {};
  }

  start(body: Schemas['StartRequest']) {
    return answer(this.api.POST('/start', { body }));
  }

  status(sessionId: string) {
    return answer(this.api.GET('/status', { params: { query: { sessionId } } }));
  }

  submit(body: SubmitRequest) {
    return answer(this.api.POST('/submit-tool-result', { body }));
  }

  resume(body: Schemas['ResumeRequest']) {
    return answer(this.api.POST('/resume', { body }));
  }

  interrupt(sessionId: string) {
    return answer(this.api.POST('/interrupt', { body: { sessionId } }));
  }

  abort(sessionId: string) {
    return answer(this.api.POST('/abort', { body: { sessionId } }));
  }

  /** Deletes the session tree rooted at `sessionId` once no run works on it. */
  delete(sessionId: string) {
    return answer(this.api.POST('/delete', { body: { sessionId } }));
  }

  snapshot(sessionId: string) {
    return answer(this.api.GET('/snapshot', { params: { query: { sessionId } } }));
  }

  usage(sessionId: string) {
    return answer(this.api.GET('/usage', { params: { query: { sessionId } } }));
  }

  pending(query: paths['/pending']['get']['parameters']['query'] = {}) {
    return answer(this.api.GET('/pending', { params: { query } }));
  }

  sessions(query: paths['/sessions']['get']['parameters']['query'] = {}) {
    return answer(this.api.GET('/sessions', { params: { query } }));
  }

  /**
   * The session's chunks after `fromSequence` (exclusive), through its run's `end`; a dropped
   * connection is followed again from the last sequence seen. A last `error` event (e.g.
   * `TRUNCATED`) is thrown as a BatonError.
   */
  async *follow(sessionId: string, fromSequence = 0): AsyncGenerator<StreamChunk> {
    let after = fromSequence;
    // A connection that ends before the run's `end` is followed again, as long as the one before
    // brought something (a stream of a session with nothing newer ends at once).
    for (let progressed = true; progressed; ) {
      progressed = false;
      const url = new URL('/sse', this.options.baseUrl);
      url.searchParams.set('sessionId', sessionId);
      url.searchParams.set('fromSequence', String(after));
      const response = await (this.options.fetch ?? fetch)(url, { headers: this.headers() });
      if (!response.ok || !response.body) {
        throw new BatonError(response.status, await response.json().catch(() => ({})));
      }
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        let cut;
        while ((cut = buffer.indexOf('\n\n')) >= 0) {
          const event = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          const lines = event.split('\n');
          const name = lines.find((l) => l.startsWith('event:'))?.slice(6).trim();
          const data = lines.filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).join('\n');
          if (!data) continue;
          if (name === 'error') throw new BatonError(200, JSON.parse(data));
          const chunk = JSON.parse(data) as StreamChunk & { sequence: number };
          after = chunk.sequence;
          progressed = true;
          yield chunk;
          if (chunk.type === 'end') return;
        }
      }
    }
  }
}
