import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { GatewayClient } from '../../src/gateway/client.js';
import { BadRequestError, RateLimitError, ServiceUnavailableError } from '../../src/gateway/errors.js';
import { retrying } from '../../src/gateway/retrying.js';
import {
  envelope,
  type Reply,
  type ScriptedResponse,
  type ScriptedServer,
  startScriptedServer,
} from './scripted-server.js';

let server: ScriptedServer;
let client: GatewayClient;
/** When each request reached the server (ms, performance clock). */
let arrivals: number[];

beforeAll(async () => {
  server = await startScriptedServer();
  client = new GatewayClient({
    baseUrl: server.baseUrl,
    apiKey: 'sk-retrying-api-key',
    managementKey: 'sk-retrying-mgmt',
  });
});
afterAll(async () => {
  await client.close();
  await server.close();
});
afterEach(() => {
  server.requests.length = 0;
});

/** Wraps a reply so its arrival time is recorded. */
function timed(reply: ScriptedResponse): Reply {
  return (_req, res) => {
    arrivals.push(performance.now());
    res.writeHead(reply.status ?? 200, { 'content-type': 'application/json', ...reply.headers });
    res.end(JSON.stringify(reply.body));
  };
}

const fast = { baseDelayMs: 1, maxDelayMs: 5 };
const models = { body: { data: [{ id: 'emu/embed-small' }] } };

describe('retrying(client)', () => {
  it('retries a transient failure and reports it', async () => {
    arrivals = [];
    server.reply({ status: 503, body: envelope(503, 'busy') }, models);
    const onRetry = vi.fn();
    const result = await retrying(client, { ...fast, onRetry }).listEmbeddingModels();
    expect(result.map((m) => m.id)).toEqual(['emu/embed-small']);
    expect(server.requests).toHaveLength(2);
    expect(onRetry).toHaveBeenCalledOnce();
    expect(onRetry.mock.calls[0]?.[0]).toBeInstanceOf(ServiceUnavailableError);
  });

  it('throws a permanent failure at once', async () => {
    server.reply({ status: 400, body: envelope(400, 'bad input') });
    const error = await retrying(client, fast)
      .embeddings({ model: 'm', input: 'x' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect((error as BadRequestError).attempts).toBe(1);
    expect(server.requests).toHaveLength(1);
  });

  it('gives up after maxAttempts with the attempt count on the error', async () => {
    server.reply(...Array(3).fill({ status: 529, body: envelope(529, 'overloaded') }));
    const error = await retrying(client, { ...fast, maxAttempts: 3 })
      .transcribe({ model: 'm', audio: { data: 'AA==', format: 'wav' } })
      .catch((e: unknown) => e);
    expect((error as { attempts: number }).attempts).toBe(3);
    expect(server.requests).toHaveLength(3);
  });

  it('holds every caller on the key behind a Retry-After through the shared gate', async () => {
    arrivals = [];
    // The shared gate is the client's own: every caller through it waits there.
    server.reply(
      timed({ status: 429, headers: { 'retry-after-ms': '80' }, body: envelope(429, 'slow down') }),
      timed(models),
      timed(models),
    );
    let second: Promise<unknown> | undefined;
    const gateway = retrying(client, {
      ...fast,
      // As soon as the first caller sees the 429, another caller on the same key starts.
      onRetry: (error) => {
        expect(error).toBeInstanceOf(RateLimitError);
        second = gateway.listEmbeddingModels();
      },
    });
    await gateway.listEmbeddingModels();
    await second;
    expect(arrivals).toHaveLength(3);
    expect(arrivals[1]! - arrivals[0]!).toBeGreaterThanOrEqual(79);
    expect(arrivals[2]! - arrivals[0]!).toBeGreaterThanOrEqual(79);
  });

  it('retries each page of iterateMembers on its own', async () => {
    const page = (offset: number, total: number) => ({
      body: {
        data: [
          {
            id: `u${offset}`,
            first_name: null,
            last_name: null,
            email: `u${offset}@x.org`,
            role: 'org:member',
          },
        ],
        total_count: total,
      },
    });
    server.reply(page(0, 2), { status: 500, body: envelope(500, 'oops') }, page(1, 2));
    const ids: string[] = [];
    for await (const member of retrying(client, fast).iterateMembers({ pageSize: 1 })) ids.push(member.id);
    expect(ids).toEqual(['u0', 'u1']);
    expect(server.requests.map((r) => r.url)).toEqual([
      '/v1/organization/members?offset=0&limit=1',
      '/v1/organization/members?offset=1&limit=1',
      '/v1/organization/members?offset=1&limit=1',
    ]);
  });

  it("stops waiting when the call's signal aborts", async () => {
    server.reply({ status: 429, headers: { 'retry-after': '60' }, body: envelope(429, 'later') });
    const controller = new AbortController();
    const call = retrying(client, { onRetry: () => controller.abort('cancelled') }).listEmbeddingModels({
      signal: controller.signal,
    });
    await expect(call).rejects.toBe('cancelled');
    expect(server.requests).toHaveLength(1);
  });
});
