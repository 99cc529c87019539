import diagnostics from 'node:diagnostics_channel';
import type { ServerResponse } from 'node:http';
import { inspect } from 'node:util';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { UsageError } from '../../src/errors.js';
import { GatewayClient } from '../../src/gateway/client.js';
import {
  AuthenticationError,
  BadGatewayError,
  BadRequestError,
  ConnectionError,
  GatewayError,
  GatewayTimeoutError,
  InsufficientCreditsError,
  InternalServerError,
  NotFoundError,
  ProviderOverloadedError,
  RateLimitError,
  RequestTimeoutError,
  ServiceUnavailableError,
} from '../../src/gateway/errors.js';
import { envelope, type ScriptedServer, startScriptedServer } from './scripted-server.js';

const API_KEY = 'sk-emb-test-4f1c2a9e8b7d6c5a';
const MANAGEMENT_KEY = 'sk-mgmt-test-0a1b2c3d4e5f6789';

let server: ScriptedServer;
let client: GatewayClient;

beforeAll(async () => {
  server = await startScriptedServer();
});
afterAll(async () => {
  await server.close();
});
// A fresh client per test: a client honours a Retry-After it was given for every later call.
beforeEach(() => {
  client = new GatewayClient({
    baseUrl: `${server.baseUrl}/`,
    apiKey: API_KEY,
    managementKey: MANAGEMENT_KEY,
  });
});
afterEach(async () => {
  await client.close();
  server.requests.length = 0;
});

const OK_EMBEDDING = { data: [{ embedding: [0.1, 0.2] }] };

async function failure(promise: Promise<unknown>): Promise<GatewayError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(GatewayError);
  return error as GatewayError;
}

describe('GatewayClient over HTTP: errors', () => {
  it.each([
    [400, BadRequestError, false],
    [401, AuthenticationError, false],
    [402, InsufficientCreditsError, false],
    [403, AuthenticationError, false],
    [404, NotFoundError, false],
    [408, RequestTimeoutError, true],
    [429, RateLimitError, true],
    [500, InternalServerError, true],
    [502, BadGatewayError, true],
    [503, ServiceUnavailableError, true],
    [524, GatewayTimeoutError, true],
    [529, ProviderOverloadedError, true],
  ])(
    'a %i response becomes its class with the right retryable flag',
    async (status, ErrorClass, retryable) => {
      server.reply({
        status,
        headers: { 'x-request-id': `req-${status}` },
        body: envelope(status, 'scripted failure', { provider_name: 'Acme' }),
      });
      const error = await failure(client.embeddings({ model: 'emu/embed-small', input: 'hi' }));
      expect(error).toBeInstanceOf(ErrorClass);
      expect(error.retryable).toBe(retryable);
      expect(error.status).toBe(status);
      expect(error.providerName).toBe('Acme');
      expect(error.requestId).toBe(`req-${status}`);
      expect(error.message).toContain(`gateway ${status} `);
      expect(error.message).toContain('scripted failure (provider: Acme, request id: req-');
    },
  );

  it.each([
    [{ 'retry-after': '3' }, 3000],
    [{ 'retry-after': '0.25' }, 250],
    [{ 'retry-after-ms': '120.5' }, 121],
  ])('reads Retry-After %o over HTTP', async (headers, expected) => {
    server.reply({ status: 429, headers, body: envelope(429, 'slow down') });
    const error = await failure(client.listEmbeddingModels());
    expect(error.retryAfterMs).toBe(expected);
  });

  it('reads a Retry-After HTTP date', async () => {
    const inTenSeconds = new Date(Math.ceil(Date.now() / 1000) * 1000 + 10_000).toUTCString();
    server.reply({
      status: 503,
      headers: { 'retry-after': inTenSeconds },
      body: envelope(503, 'maintenance'),
    });
    const error = await failure(client.listEmbeddingModels());
    expect(error.retryAfterMs).toBeGreaterThan(8_000);
    expect(error.retryAfterMs).toBeLessThanOrEqual(11_000);
  });

  it('holds every later call on the key until a Retry-After it was given has passed', async () => {
    server.reply({ status: 429, headers: { 'retry-after-ms': '150' }, body: envelope(429, 'slow down') });
    server.reply({ status: 200, body: OK_EMBEDDING });
    await failure(client.embeddings({ model: 'emu/embed-small', input: 'a' }));
    const started = Date.now();
    await client.embeddings({ model: 'emu/embed-small', input: 'b' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(145);
    expect(client.retryAfterGate.isOpen).toBe(true);
  });

  it('reads bodies in any UTF-8 text, with or without a BOM', async () => {
    const message = 'über-limit: 模型 ✓ 🙂';
    const bom = Buffer.from([0xef, 0xbb, 0xbf]);
    const answer =
      (status: number, body: unknown, withBom: boolean) => (_req: unknown, res: ServerResponse) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        const json = Buffer.from(JSON.stringify(body));
        res.end(withBom ? Buffer.concat([bom, json]) : json);
      };
    server.reply(answer(400, envelope(400, message), false), answer(400, envelope(400, message), true));
    server.reply(answer(200, OK_EMBEDDING, true));
    for (let i = 0; i < 2; i++) {
      const error = await failure(client.embeddings({ model: 'emu/embed-small', input: 'hi' }));
      expect(error.message).toContain(message);
    }
    const ok = await client.embeddings({ model: 'emu/embed-small', input: 'hi' });
    expect([...ok.vectors[0]!]).toEqual([...new Float32Array([0.1, 0.2])]);
  });

  it('keeps an excerpt of a non-JSON error body', async () => {
    server.reply({
      status: 502,
      headers: { 'content-type': 'text/html' },
      body: '<html><h1>Bad gateway</h1></html>',
    });
    const error = await failure(client.listEmbeddingModels());
    expect(error).toBeInstanceOf(BadGatewayError);
    expect(error.message).toBe(
      'gateway 502 provider error: non-JSON body: "<html><h1>Bad gateway</h1></html>"',
    );
  });

  it('turns a connection reset into a retryable ConnectionError with a cause, then recovers', async () => {
    server.reply('reset');
    const error = await failure(client.embeddings({ model: 'emu/embed-small', input: 'hi' }));
    expect(error).toBeInstanceOf(ConnectionError);
    expect(error.status).toBe(0);
    expect(error.retryable).toBe(true);
    expect(error.cause).toBeInstanceOf(Error);
    // The pool replaces the dead connection.
    server.reply({ body: OK_EMBEDDING });
    await expect(client.embeddings({ model: 'emu/embed-small', input: 'hi' })).resolves.toMatchObject({
      dims: 2,
    });
  });

  it('turns an answer cut off mid-body into a retryable ConnectionError, not a bad body', async () => {
    server.reply((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '4000' });
      res.write('{"data":[{"index":0,"embedding":"AAAA');
      setTimeout(() => res.socket?.destroy(), 10);
    });
    const error = await failure(client.embeddings({ model: 'emu/embed-small', input: 'hi' }));
    expect(error).toBeInstanceOf(ConnectionError);
    expect(error.retryable).toBe(true);
  });

  it('gives up on a body that stops arriving, at the call deadline', async () => {
    server.reply((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"data":[{"index":0,');
    });
    const error = await failure(
      client.embeddings({ model: 'emu/embed-small', input: 'hi' }, { timeoutMs: 80 }),
    );
    expect(error).toBeInstanceOf(ConnectionError);
    expect((error as ConnectionError).networkCode).toBe('TIMEOUT');
  });

  it('reads an answer that arrives in many pieces, one after another, as one body', async () => {
    const vectors = Array.from({ length: 64 }, (_, i) =>
      Float32Array.from({ length: 96 }, (_, k) => i + k / 100),
    );
    const text = JSON.stringify({
      data: vectors.map((v, index) => ({ index, embedding: Buffer.from(v.buffer).toString('base64') })),
    });
    server.reply((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const pieces = Array.from({ length: Math.ceil(text.length / 997) }, (_, i) =>
        text.slice(i * 997, (i + 1) * 997),
      );
      const next = () => {
        const piece = pieces.shift();
        if (piece === undefined) res.end();
        else res.write(piece, () => setTimeout(next, 1));
      };
      next();
    });
    const answer = await client.embeddings({ model: 'emu/embed-small', input: vectors.map(() => 'x') });
    expect(answer.vectors).toEqual(vectors);
  });

  it('turns a refused connection into a ConnectionError', async () => {
    const dead = await startScriptedServer();
    await dead.close();
    const offline = new GatewayClient({ baseUrl: dead.baseUrl, apiKey: API_KEY });
    const error = await failure(offline.listEmbeddingModels());
    expect(error).toBeInstanceOf(ConnectionError);
    expect((error as ConnectionError).networkCode).toBe('ECONNREFUSED');
    expect(error.retryable).toBe(true);
    await offline.close();
  });

  it('gives up after the call deadline with a retryable timeout', async () => {
    server.reply('hang');
    const started = performance.now();
    const error = await failure(
      client.embeddings({ model: 'emu/embed-small', input: 'hi' }, { timeoutMs: 80 }),
    );
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(error).toBeInstanceOf(ConnectionError);
    expect((error as ConnectionError).networkCode).toBe('TIMEOUT');
    expect(error.retryable).toBe(true);
    expect(error.message).toBe('gateway connection failed: no complete response within 80 ms');
  });

  it("rejects with the caller's abort reason, not a gateway error", async () => {
    server.reply('hang');
    const controller = new AbortController();
    const call = client.listEmbeddingModels({ signal: controller.signal });
    setTimeout(() => controller.abort(new Error('user cancelled')), 20);
    await expect(call).rejects.toThrow('user cancelled');
    await expect(client.listEmbeddingModels({ signal: AbortSignal.abort('already') })).rejects.toBe(
      'already',
    );
  });
});

describe('GatewayClient over HTTP: what is sent', () => {
  it('sends the bearer key, attribution headers and a JSON body', async () => {
    const attributed = new GatewayClient({
      baseUrl: server.baseUrl,
      apiKey: API_KEY,
      referer: 'https://example.org/app',
      serviceTitle: 'Embedpipe Tests',
      userAgent: 'embedpipe-test/1',
    });
    server.reply({ body: OK_EMBEDDING });
    await attributed.embeddings({ model: 'emu/embed-small', input: 'hello' });
    await attributed.close();
    const [sent] = server.requests;
    expect(sent?.method).toBe('POST');
    expect(sent?.url).toBe('/v1/embeddings');
    expect(sent?.headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(sent?.headers['http-referer']).toBe('https://example.org/app');
    expect(sent?.headers['x-service-title']).toBe('Embedpipe Tests');
    expect(sent?.headers['user-agent']).toBe('embedpipe-test/1');
    expect(sent?.headers['content-type']).toBe('application/json');
    expect(JSON.parse(sent?.body ?? '')).toEqual({ model: 'emu/embed-small', input: 'hello' });
  });

  it('omits attribution headers that were not configured, and tolerates a trailing slash', async () => {
    server.reply({ body: { data: [] } });
    await client.listEmbeddingModels();
    const [sent] = server.requests;
    expect(sent?.url).toBe('/v1/embeddings/models');
    expect(sent?.headers['http-referer']).toBeUndefined();
    expect(sent?.headers['x-service-title']).toBeUndefined();
    expect(sent?.headers['content-type']).toBeUndefined();
  });

  it('refuses a call without its key before any request, naming the variable', async () => {
    const keyless = new GatewayClient({ baseUrl: server.baseUrl });
    await expect(keyless.embeddings({ model: 'm', input: 'x' })).rejects.toThrow(UsageError);
    await expect(keyless.listEmbeddingModels()).rejects.toThrow(/EMBEDPIPE_API_KEY/);
    await expect(keyless.listMembers()).rejects.toThrow(/EMBEDPIPE_MANAGEMENT_KEY/);
    await keyless.close();
    expect(server.requests).toHaveLength(0);
  });

  it('refuses an empty input list before any request', async () => {
    await expect(client.embeddings({ model: 'm', input: [] })).rejects.toThrow(UsageError);
    expect(server.requests).toHaveLength(0);
  });

  it('refuses a base URL that is not http(s), without echoing credentials', () => {
    expect(() => new GatewayClient({ baseUrl: 'not a url' })).toThrow(UsageError);
    expect(() => new GatewayClient({ baseUrl: 'ftp://user:hunter2@host/v1' })).toThrow(/\[redacted\]@host/);
  });

  it('sends every body whole while bodies use the memory of earlier ones, with many in flight', async () => {
    // 48 bodies of ~200 KB, 12 at a time: each request's buffer is used again for a later body once
    // it is answered, so a buffer used while still being sent would garble a body.
    const inputsOf = (n: number) =>
      Array.from({ length: 64 }, (_, i) => `request ${n} input ${i} ${'東京 👨‍👩‍👧 x'.repeat(150)}`);
    const answerAll = (_req: unknown, res: ServerResponse, recorded: { body: string }) => {
      let input: string[];
      try {
        input = (JSON.parse(recorded.body) as { input: string[] }).input;
      } catch {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(JSON.stringify(envelope(400, 'garbled body')));
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ data: input.map(() => ({ embedding: [0.1, 0.2] })) }));
    };
    server.reply(...Array.from({ length: 48 }, () => answerAll));
    let next = 0;
    await Promise.all(
      Array.from({ length: 12 }, async () => {
        while (next < 48) {
          const n = next++;
          const result = await client.embeddings({ model: 'emu/embed-small', input: inputsOf(n) });
          expect(result.vectors).toHaveLength(64);
        }
      }),
    );
    const received = server.requests.map((r) => JSON.parse(r.body) as { input: string[] });
    expect(received).toHaveLength(48);
    const byRequest = new Map(received.map((body) => [body.input[0], body.input]));
    for (let n = 0; n < 48; n++) expect(byRequest.get(inputsOf(n)[0]), `request ${n}`).toEqual(inputsOf(n));
  });

  it('writes the request a success freed a slot for before parsing that answer', async () => {
    // One slot: the second call waits for it. Parsing the first answer before the second request
    // was written kept the slot idle for as long (docs/benchmarks.md, "a thirty-sixth session").
    const windowed = new GatewayClient({ baseUrl: server.baseUrl, apiKey: API_KEY, maxInFlight: 1 });
    server.reply({ status: 200, body: OK_EMBEDDING }, { status: 200, body: OK_EMBEDDING });
    const order: string[] = [];
    const onSent = () => order.push('sent');
    diagnostics.subscribe('undici:client:sendHeaders', onSent);
    try {
      await Promise.all(
        ['first', 'second'].map((name) =>
          windowed
            .embeddings({ model: 'emu/embed-small', input: [name] })
            .then(() => order.push(`${name} answered`)),
        ),
      );
    } finally {
      diagnostics.unsubscribe('undici:client:sendHeaders', onSent);
      await windowed.close();
    }
    expect(order).toEqual(['sent', 'sent', 'first answered', 'second answered']);
  });

  it('refuses calls after close()', async () => {
    const closing = new GatewayClient({ baseUrl: server.baseUrl, apiKey: API_KEY });
    await closing.close();
    await closing.close();
    await expect(closing.listEmbeddingModels()).rejects.toThrow('gateway client is closed');
  });
});

describe('keys never leak', () => {
  function expectNoKey(...shown: string[]) {
    for (const text of shown) {
      expect(text).not.toContain(API_KEY);
      expect(text).not.toContain(MANAGEMENT_KEY);
    }
  }

  it('not from the client itself', () => {
    expectNoKey(inspect(client, { depth: 10, showHidden: true }), JSON.stringify(client), String(client));
    expect(inspect(client)).toContain('apiKey: set');
  });

  it('not from an error whose body echoes the key', async () => {
    server.reply({
      status: 401,
      body: envelope(401, `Invalid credentials: Bearer ${API_KEY}`, {
        raw: { authorization: `Bearer ${API_KEY}` },
      }),
    });
    const error = await failure(client.embeddings({ model: 'emu/embed-small', input: 'hi' }));
    expect(error).toBeInstanceOf(AuthenticationError);
    expectNoKey(error.message, inspect(error, { depth: 10, showHidden: true }), JSON.stringify(error));
    expectNoKey(JSON.stringify(error.metadata), JSON.stringify(error.raw), String(error.stack));
  });

  it('not from a 200 whose bad body echoes the management key', async () => {
    server.reply({ body: `oops ${MANAGEMENT_KEY}` });
    const error = await failure(client.listMembers());
    expectNoKey(error.message, inspect(error, { depth: 10 }), JSON.stringify(error));
  });

  it('not from network errors and their cause', async () => {
    server.reply('reset');
    const reset = await failure(client.embeddings({ model: 'emu/embed-small', input: 'hi' }));
    server.reply('hang');
    const timedOut = await failure(client.listMembers({}, { timeoutMs: 50 }));
    for (const error of [reset, timedOut]) {
      expectNoKey(
        error.message,
        inspect(error, { depth: 10, showHidden: true }),
        JSON.stringify(error),
        inspect(error.cause, { depth: 10, showHidden: true }),
      );
    }
  });
});
