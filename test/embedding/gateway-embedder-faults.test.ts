/** The embedder against a scripted gateway: a request refused whole, and paid answers the client rejects. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Batch, Chunk } from '../../src/domain.js';
import { BatchFailedError } from '../../src/embedding/gateway-embedder.js';
import { GatewayClient } from '../../src/gateway/index.js';
import { envelope, type ScriptedServer, startScriptedServer } from '../gateway/scripted-server.js';
import { batchOf as batchFor, textChunk } from '../helpers/chunks.js';
import { testEmbedder } from '../helpers/embedder.js';

const chunk = (documentId: string, text: string): Chunk =>
  textChunk(documentId, 0, text, 10, `h-${documentId}`);
const batchOf = (chunks: Chunk[]): Batch => batchFor('batch-f', 'emu/embed-small', chunks);
const answer = (count: number, dims = 3) => ({
  status: 200,
  body: {
    object: 'list',
    model: 'emu/embed-small',
    data: Array.from({ length: count }, (_, index) => ({
      object: 'embedding',
      index,
      embedding: Array.from({ length: dims }, () => 0.5),
    })),
    usage: { prompt_tokens: count * 2, total_tokens: count * 2 },
  },
});

let server: ScriptedServer;
let client: GatewayClient;
beforeAll(async () => {
  server = await startScriptedServer();
  client = new GatewayClient({ baseUrl: server.baseUrl, apiKey: 'k' });
});
afterAll(async () => {
  await client.close();
  await server.close();
});

function embedder(maxAttempts = 2) {
  return testEmbedder(client, { encoding: 'float', maxAttempts, pricePerToken: 0.001 });
}
const signal = new AbortController().signal;

describe('GatewayEmbedder against faults', () => {
  it('fails the batch (not committed) when bisection ends with every input refused by the same status', async () => {
    const bad = { status: 400, body: envelope(400, 'unsupported parameter: dimensions') };
    // 4 inputs: the whole, two halves, four singles, every one a 400. From the third 400 in a row
    // the embedder probes with a plain input; refused too, it backs off and sends the same group
    // again (twice: maxAttempts, a probe before each), then halves on.
    server.reply(...Array.from({ length: 11 }, () => bad));
    const before = server.requests.length;
    const { instance } = embedder();
    const chunks = ['a', 'b', 'c', 'd'].map((t, i) => chunk(`u${i}`, t));
    const error = await instance.embedBatch(batchOf(chunks), signal).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BatchFailedError);
    expect((error as BatchFailedError).cause.status).toBe(400);
    expect(server.requests.length - before).toBe(11);
  });

  it('halves on without waiting when a probe shows the gateway takes plain inputs: the inputs are refused', async () => {
    const bad = { status: 400, body: envelope(400, 'input refused') };
    // Whole, half, single: three 400s in a row; the probe is accepted, so halving goes on (and once more).
    server.reply(bad, bad, bad, answer(1), bad, bad, bad, answer(1), bad);
    const before = server.requests.length;
    const { instance } = embedder();
    const chunks = ['a', 'b', 'c', 'd'].map((t, i) => chunk(`p${i}`, t));
    const error = await instance.embedBatch(batchOf(chunks), signal).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BatchFailedError);
    expect(server.requests.length - before).toBe(9);
  });

  it('still keeps the good rows when only some inputs are refused', async () => {
    const bad = { status: 400, body: envelope(400, 'bad input') };
    server.reply(bad, answer(1), bad);
    const { instance } = embedder();
    const result = await instance.embedBatch(batchOf([chunk('k0', 'x'), chunk('k1', 'y')]), signal);
    expect(result.chunks.map((c) => c.documentId)).toEqual(['k0']);
    expect(result.failures).toMatchObject([{ documentId: 'k1', status: 400 }]);
  });

  it('counts the cost of a 200 the client rejects (too few embeddings), estimated from pricing', async () => {
    server.reply(answer(1), answer(2));
    const { instance, stats } = embedder();
    const result = await instance.embedBatch(batchOf([chunk('p0', 'x'), chunk('p1', 'y')]), signal);
    expect(result.chunks).toHaveLength(2);
    // Rejected answer: 2 chunks × 10 estimated tokens × 0.001; the good one: its 4 reported tokens.
    expect(stats.cost).toBeCloseTo(0.02 + 0.004, 10);
    expect(result.usage.cost).toBeCloseTo(0.024, 10);
  });

  it('counts the cost of rejected answers even when the batch fails after its retries', async () => {
    server.reply(answer(1, 3), answer(1, 3));
    const { instance, stats } = embedder(2);
    const error = await instance
      .embedBatch(batchOf([chunk('q0', 'x'), chunk('q1', 'y')]), signal)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BatchFailedError);
    expect(stats.cost).toBeCloseTo(0.04, 10);
  });
});
