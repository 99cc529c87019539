// Distributed mode: `embedpipe enqueue` + N `embedpipe worker` processes on a private Redis, against
// the emulator at a fixed latency with an in-flight cap per key. Reports, per worker count, the
// throughput as a share of the ceiling (cap × inputs per request / latency), Redis's peak memory
// while the chunks flow, and the producer's enqueue rate (alone, with no backpressure).
// `npm run build && node bench/distributed.bench.mjs [chunks] [workerCounts]`
//   e.g. node bench/distributed.bench.mjs 1000000 4   (one million chunks through 4 workers)
import { mkdtemp, readlink, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { API_KEY, cliRun, startGateway, startRedis, startWorkers, writeJsonlCorpus } from './lib.mjs';

const chunks = Number(process.argv[2] ?? 100_000);
const workerCounts = (process.argv[3] ?? '1,2,4').split(',').map(Number);
const latencyMs = 50;
const cap = 8; // requests in flight per key, at the gateway
const inputsPerRequest = 128;
const ceiling = (cap * inputsPerRequest) / (latencyMs / 1000);

const dir = await mkdtemp(join(tmpdir(), 'embedpipe-dist-bench-'));
const redisServer = await startRedis(dir);
const redis = new Redis({ port: redisServer.port, maxRetriesPerRequest: null });
const config = join(dir, 'gateway.json');
await writeFile(
  config,
  JSON.stringify({ keys: [{ key: API_KEY, credits: 1e9, limits: { maxInFlight: cap } }] }),
);
const gateway = await startGateway(['--latency', String(latencyMs), '--config', config]);
const env = { PATH: process.env.PATH, EMBEDPIPE_API_KEY: API_KEY, EMBEDPIPE_BASE_URL: gateway.baseUrl };
const redisUrl = redisServer.url;
try {
  const input = join(dir, 'corpus.jsonl');
  await writeJsonlCorpus(input, Infinity, 60, { maxDocuments: chunks });
  const common = [
    '--input',
    input,
    '--model',
    'emu/embed-small',
    '--max-inputs',
    String(inputsPerRequest),
    '--redis',
    redisUrl,
  ];

  // The producer alone: no workers, no backpressure.
  {
    const started = performance.now();
    await cli([
      'enqueue',
      ...common,
      '--out',
      join(dir, 'enqueue-only'),
      '--queue',
      'solo',
      '--high-water',
      '1000000000',
    ]);
    const seconds = (performance.now() - started) / 1000;
    const memory = await usedMemory();
    console.log(
      `enqueue alone: ${chunks} chunks in ${seconds.toFixed(1)} s = ${Math.round(chunks / seconds)} chunks/s ` +
        `(${Math.round(chunks / inputsPerRequest / seconds)} jobs/s); Redis holds ${(memory / 2 ** 20).toFixed(1)} MB with every job waiting`,
    );
    await redis.flushall();
  }

  for (const workers of workerCounts) {
    await redis.flushall();
    await redis.config('RESETSTAT');
    const out = join(dir, `out-${workers}`);
    const queue = `w${workers}`;
    const perWorker = Math.max(1, Math.ceil(cap / workers));
    const pool = startWorkers(workers, { redisUrl, queue, env, args: ['--concurrency', String(perWorker)] });
    let peak = 0;
    const sampler = setInterval(async () => {
      peak = Math.max(peak, await usedMemory());
    }, 100);
    const started = performance.now();
    await cli(['enqueue', ...common, '--out', out, '--queue', queue]);
    const enqueued = performance.now();
    while (!(await readlink(out).catch(() => undefined))) await new Promise((r) => setTimeout(r, 50));
    const switchedAt = Date.now();
    const seconds = (performance.now() - started) / 1000;
    clearInterval(sampler);
    const rate = chunks / seconds;
    // The embedding phase alone: from the run's start to its last committed batch (the rest is
    // finalize: compacting the per-job part files, manifest, switch).
    const runKey = (await redis.keys(`embedpipe:${queue}:run:*`)).find((key) => !/:(done|failed)$/.test(key));
    const [startedAt, lastDoneAt] = runKey ? await redis.hmget(runKey, 'startedAt', 'lastDoneAt') : [];
    const embedding = startedAt && lastDoneAt ? (Number(lastDoneAt) - Number(startedAt)) / 1000 : undefined;
    console.log(
      `${workers} worker(s) × ${perWorker} in flight: ${chunks} chunks in ${seconds.toFixed(1)} s (enqueue done at ` +
        `${((enqueued - started) / 1000).toFixed(1)} s) = ${Math.round(rate)}/s, ${((100 * rate) / ceiling).toFixed(0)}% of the ` +
        `${ceiling}/s ceiling; embedding phase ${embedding?.toFixed(1)} s = ${embedding ? Math.round(chunks / embedding) : '?'}/s, ` +
        `${embedding ? ((100 * chunks) / embedding / ceiling).toFixed(0) : '?'}%; ` +
        `finalize ${lastDoneAt ? ((switchedAt - Number(lastDoneAt)) / 1000).toFixed(2) : '?'} s; Redis peak ${(peak / 2 ** 20).toFixed(1)} MB`,
    );
    await pool.stop();
  }
} finally {
  await gateway.stop();
  redis.disconnect();
  await redisServer.stop();
  await rm(dir, { recursive: true, force: true });
}

async function usedMemory() {
  const info = await redis.info('memory');
  return Number(/used_memory:(\d+)/.exec(info)?.[1] ?? 0);
}

async function cli(args) {
  await cliRun(args, env);
}
