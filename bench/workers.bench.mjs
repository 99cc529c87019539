// Do workers scale? `embedpipe enqueue` + N `embedpipe worker` processes (each --concurrency C) on a
// private Redis, against an emulator answering in 500 ms with no in-flight cap, so the cores of
// this machine are not what limits a worker: N workers should move N times one worker's inputs.
// Measured at the gateway: inputs answered per second between the first and the last embedding
// answer (the producer's start and finalize's compaction are outside that window), against
// N × one worker's.
// `npm run build && node bench/workers.bench.mjs [chunks] [workerCounts] [concurrency] [latencyMs]`
import { mkdtemp, readlink, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEmulator } from '../dist/emulator/index.js';
import { API_KEY, cliRun, startRedis, startWorkers, writeJsonlCorpus } from './lib.mjs';

const chunks = Number(process.argv[2] ?? 30_000);
const workerCounts = (process.argv[3] ?? '1,2,4').split(',').map(Number);
const concurrency = Number(process.argv[4] ?? 4);
const latencyMs = Number(process.argv[5] ?? 500);
const inputsPerRequest = 64;

const dir = await mkdtemp(join(tmpdir(), 'embedpipe-workers-bench-'));
const redisServer = await startRedis(dir);
const emulator = await startEmulator({ keys: [{ key: API_KEY, credits: 1e9 }], faults: { latencyMs } });
const env = { PATH: process.env.PATH, EMBEDPIPE_API_KEY: API_KEY, EMBEDPIPE_BASE_URL: emulator.baseUrl };
const redisUrl = redisServer.url;
try {
  const input = join(dir, 'corpus.jsonl');
  await writeJsonlCorpus(input, Infinity, 60, { maxDocuments: chunks });
  let single;
  for (const workers of workerCounts) {
    const queue = `w${workers}`;
    const out = join(dir, `out-${workers}`);
    const pool = startWorkers(workers, {
      redisUrl,
      queue,
      env,
      args: ['--concurrency', String(concurrency)],
    });
    const from = emulator.requests.length;
    const started = performance.now();
    await cliRun(
      [
        'enqueue',
        '--input',
        input,
        '--model',
        'emu/embed-small',
        '--max-inputs',
        String(inputsPerRequest),
        '--out',
        out,
        '--queue',
        queue,
        '--redis',
        redisUrl,
      ],
      env,
    );
    while (!(await readlink(out).catch(() => undefined))) await new Promise((r) => setTimeout(r, 50));
    const wall = (performance.now() - started) / 1000;
    const answered = emulator.requests
      .slice(from)
      .filter((r) => r.path === '/embeddings' && r.status === 200 && r.inputs > 1);
    const first = Math.min(...answered.map((r) => r.at + r.ms));
    const last = Math.max(...answered.map((r) => r.at + r.ms));
    const inputs = answered.reduce((sum, r) => sum + r.inputs, 0);
    // The window opens at the first answer: add one request's time so it counts whole requests.
    const seconds = (last - first) / 1000 + latencyMs / 1000;
    const rate = inputs / seconds;
    // One worker's rate: the first count's, per worker (exactly one worker's when the list starts at 1).
    single ??= rate / workers;
    const ceiling = (workers * concurrency * inputsPerRequest) / (latencyMs / 1000);
    console.log(
      `${workers} worker(s) × ${concurrency}: ${inputs} inputs at the gateway in ${seconds.toFixed(1)} s = ` +
        `${Math.round(rate)}/s (${((100 * rate) / ceiling).toFixed(0)}% of ${ceiling}/s); ` +
        `${(rate / (workers * single)).toFixed(2)} × ${workers} × one worker's; whole run ${wall.toFixed(1)} s`,
    );
    await pool.stop();
  }
} finally {
  await emulator.close();
  await redisServer.stop();
  await rm(dir, { recursive: true, force: true });
}
