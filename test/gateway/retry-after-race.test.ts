/**
 * Retry-After against an emulator on its own thread (its clock keeps running while ours is busy):
 * a 429 answered while the client's thread was busy waits unread in its socket, and a request let
 * out in the same I/O phase (another answer freed its slot) arrived after the 429 with time to
 * spare. The emulator must record zero violations. Needs the built emulator (dist/).
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GatewayClient } from '../../src/gateway/index.js';
import { withRetry } from '../../src/retry/index.js';

const BUILT = resolve('dist/emulator/index.js');
const KEY = 'emu-test-key';

const source = (options: unknown) => `
import { parentPort } from 'node:worker_threads';
import { startEmulator } from ${JSON.stringify(pathToFileURL(BUILT).href)};
const emulator = await startEmulator(${JSON.stringify(options)});
parentPort.postMessage({ baseUrl: emulator.baseUrl });
parentPort.on('message', async (message) => {
  if (message === 'stats') parentPort.postMessage({ stats: emulator.stats });
  if (message === 'close') { await emulator.close(); parentPort.close(); }
});
`;

let worker: Worker;
let baseUrl: string;
const next = () => new Promise<Record<string, unknown>>((done) => worker.once('message', done));

beforeAll(async () => {
  if (!existsSync(BUILT)) throw new Error(`${BUILT} is missing: run \`npm run build\` first`);
  const options = {
    recordRequests: false,
    faults: { seed: 9, probabilities: { 429: 0.2 }, retryAfterSeconds: 1, latencyMs: { min: 5, max: 40 } },
  };
  worker = new Worker(new URL(`data:text/javascript,${encodeURIComponent(source(options))}`));
  ({ baseUrl } = (await next()) as { baseUrl: string });
});
afterAll(async () => {
  worker.postMessage('close');
  await worker.terminate();
});

describe('Retry-After while the client thread is busy', () => {
  it('no request goes out on a 429 that already arrived unread: zero violations', async () => {
    const client = new GatewayClient({ baseUrl, apiKey: KEY, maxInFlight: 8 });
    // Busy spells of 150 ms, as a run's decoding and file encoding make them.
    const hog = setInterval(() => {
      const until = performance.now() + 150;
      while (performance.now() < until);
    }, 170);
    try {
      await Promise.all(
        Array.from({ length: 80 }, (_, i) =>
          withRetry(() => client.embeddings({ model: 'emu/embed-small', input: [`text ${i}`] }), {
            maxAttempts: 50,
            baseDelayMs: 5,
            maxDelayMs: 20,
          }),
        ),
      );
    } finally {
      clearInterval(hog);
      await client.close();
    }
    worker.postMessage('stats');
    const { stats } = (await next()) as {
      stats: { faults: Record<string, number>; retryAfterViolations: Record<string, number> };
    };
    expect(stats.faults['429']).toBeGreaterThan(10);
    expect(stats.retryAfterViolations).toEqual({});
  }, 120_000);
});

/**
 * The same race made exact, on a server in a worker (answering while the client's thread spins):
 * two requests are out and a third waits for a slot. During one busy spell the server answers the
 * second (200), which frees the slot, and then the first (429, Retry-After: 1). When the thread
 * comes back both answers wait in their sockets, the 200 ready first. The third request must not be
 * written until the 429 is read: it reaches the server a Retry-After later, not at once. Written at
 * once when the client's check at the socket (GateCheck) is taken out: ~150 ms after the 429.
 */
const heldServer = `
import { createServer } from 'node:http';
import { parentPort } from 'node:worker_threads';
const held = new Map();
const arrivals = [];
let retryAfterSentAt;
const ok = (res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ object: 'list', data: [{ object: 'embedding', index: 0, embedding: [1, 2] }],
    model: 'emu/embed-small', usage: { prompt_tokens: 1, total_tokens: 1 } }));
};
const server = createServer((req, res) => {
  let body = '';
  req.on('data', (d) => (body += d));
  req.on('end', () => {
    const name = JSON.parse(body).input[0];
    arrivals.push({ name, at: performance.now() });
    if (name !== 'first' && name !== 'second') return ok(res);
    held.set(name, res);
    if (held.size === 2) parentPort.postMessage({ held: 2 });
  });
});
parentPort.on('message', (message) => {
  if (message === 'answer') {
    ok(held.get('second'));
    setTimeout(() => {
      const res = held.get('first');
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '1' });
      res.end(JSON.stringify({ error: { code: 429, message: 'slow down' } }));
      retryAfterSentAt = performance.now();
    }, 10);
  }
  if (message === 'arrivals') parentPort.postMessage({ arrivals, retryAfterSentAt });
  if (message === 'close') server.close(() => parentPort.close());
});
server.listen(0, '127.0.0.1', () => parentPort.postMessage({ port: server.address().port }));
`;

describe('Retry-After read before the next request is written', () => {
  // Two connections: the third request reuses the second's. The default (64): the pool may open another.
  it.each([
    { connections: 2 as number | undefined, name: '2 connections' },
    { connections: undefined, name: 'the default connections' },
  ])('a 429 waiting unread holds the request its neighbour freed ($name)', async ({ connections }) => {
    const server = new Worker(new URL(`data:text/javascript,${encodeURIComponent(heldServer)}`));
    const message = () => new Promise<Record<string, unknown>>((done) => server.once('message', done));
    const { port } = (await message()) as { port: number };
    const client = new GatewayClient({
      baseUrl: `http://127.0.0.1:${port}/v1`,
      apiKey: KEY,
      maxInFlight: 2,
      allowInsecureHttp: true,
      ...(connections !== undefined && { connections }),
    });
    try {
      const held = message();
      const first = client
        .embeddings({ model: 'emu/embed-small', input: ['first'] })
        .catch((e: unknown) => e);
      const second = client.embeddings({ model: 'emu/embed-small', input: ['second'] });
      const third = client.embeddings({ model: 'emu/embed-small', input: ['third'] });
      await held;
      server.postMessage('answer');
      // Busy while both answers arrive: the 200 at once, the 429 10 ms later.
      const until = performance.now() + 150;
      while (performance.now() < until);
      await second;
      await third;
      expect(await first).toBeInstanceOf(Error);
      server.postMessage('arrivals');
      const { arrivals, retryAfterSentAt } = (await message()) as {
        arrivals: Array<{ name: string; at: number }>;
        retryAfterSentAt: number;
      };
      expect(arrivals.map((a) => a.name)).toEqual(['first', 'second', 'third']);
      const thirdAt = arrivals[2]!.at;
      expect(thirdAt - retryAfterSentAt).toBeGreaterThan(900);
    } finally {
      await client.close();
      server.postMessage('close');
      await new Promise((done) => server.once('exit', done));
    }
  });
});
