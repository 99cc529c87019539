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
