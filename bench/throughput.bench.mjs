// Throughput against the emulator with fixed latency: vectors per second as a ratio of the ceiling
// C × inputs-per-request / latency (what a client that never leaves a slot idle could reach).
// `npm run build && node bench/throughput.bench.mjs [latencyMs] [concurrency] [inputsPerRequest]`
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { API_KEY, runEmbedpipe, startGateway, writeJsonlCorpus } from './lib.mjs';

const latencyMs = Number(process.argv[2] ?? 50);
const concurrency = Number(process.argv[3] ?? 8);
const inputs = Number(process.argv[4] ?? 32);
const requests = Number(process.env.BENCH_REQUESTS ?? 400);

const dir = await mkdtemp(join(tmpdir(), 'embedpipe-bench-'));
const gateway = await startGateway(['--latency', String(latencyMs)]);
try {
  // One short document = one chunk = one input.
  const { documents } = await writeJsonlCorpus(join(dir, 'corpus.jsonl'), Infinity, 60, {
    maxDocuments: requests * inputs,
  });
  const { summary } = await runEmbedpipe(
    [
      '--input',
      join(dir, 'corpus.jsonl'),
      '--model',
      'emu/embed-small',
      '--out',
      join(dir, 'out'),
      '--concurrency',
      String(concurrency),
      '--max-inputs',
      String(inputs),
    ],
    { EMBEDPIPE_BASE_URL: gateway.baseUrl, EMBEDPIPE_API_KEY: API_KEY },
  );
  const ceiling = (concurrency * inputs) / (latencyMs / 1000);
  // Steady state: from the first request to the end (process start-up and the model lookup excluded).
  const rate = summary.rows / (summary.embeddingMs / 1000);
  console.log(
    `throughput: ${documents} docs, ${summary.requests} requests, C=${concurrency}, ${inputs} inputs/request, ` +
      `${latencyMs} ms latency: ${rate.toFixed(0)} vectors/s of a ${ceiling.toFixed(0)} ceiling = ` +
      `${((rate / ceiling) * 100).toFixed(1)}% (embedding ${(summary.embeddingMs / 1000).toFixed(2)} s of ${(summary.elapsedMs / 1000).toFixed(2)} s)`,
  );
} finally {
  await gateway.stop();
  await rm(dir, { recursive: true, force: true });
}
