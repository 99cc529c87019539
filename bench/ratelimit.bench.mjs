// Rate limits as a steady state, at real time: a gateway limited to 120 requests per minute and,
// separately, to 100,000 tokens per minute (60 s sliding windows), announcing its limits in
// x-ratelimit-* headers or not; one `embedpipe run`, and `embedpipe enqueue` with three workers on a
// private Redis. Nobody passes --rpm or --tpm: the rate is read from the headers or learned. The
// gateway (the emulator, in this process) is the judge: 429s against successes, Retry-After
// violations, and the rate of the steady part (from a minute after the first success to the last).
// Every scenario runs at once (each is bound by its gateway's rate, not by CPU).
// `npm run build && node bench/ratelimit.bench.mjs [minutes] [scenario,...]`
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readlink, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEmulator } from '../dist/emulator/index.js';
import { API_KEY, CLI, cliRun, random, sentence, startRedis } from './lib.mjs';

const minutes = Number(process.argv[2] ?? 3);
const only = process.argv[3]?.split(',');
const INPUTS = 16;
const LIMITS = {
  rpm: { limits: { requestsPerMinute: 120 }, limit: 120, perRequest: 1, words: 8 },
  tpm: { limits: { tokensPerMinute: 100_000 }, limit: 100_000, perRequest: undefined, words: 45 },
};

const dir = await mkdtemp(join(tmpdir(), 'embedpipe-ratelimit-bench-'));
const redisServer = await startRedis(dir);
const redisUrl = redisServer.url;

const scenarios = [];
for (const kind of ['rpm', 'tpm'])
  for (const headers of [true, false])
    for (const mode of ['run', 'workers']) {
      const name = `${kind}-${headers ? 'headers' : 'plain'}-${mode}`;
      if (!only || only.includes(name)) scenarios.push({ name, kind, headers, mode });
    }

try {
  const results = await Promise.all(scenarios.map((scenario) => measure(scenario)));
  console.log(
    `\n${minutes} min of work per scenario at the limit; ${INPUTS} inputs per request; no --rpm/--tpm`,
  );
  console.log(
    'scenario                  | ok   | 429 | 429/ok | violations | steady rate | of limit | whole run | seconds',
  );
  for (const r of results)
    console.log(
      `${r.name.padEnd(25)} | ${String(r.ok).padStart(4)} | ${String(r.limited).padStart(3)} | ${((100 * r.limited) / r.ok).toFixed(1).padStart(5)}% | ` +
        `${String(r.violations).padStart(10)} | ${r.steady.toFixed(0).padStart(11)} | ${((100 * r.steady) / r.limit).toFixed(1).padStart(7)}% | ` +
        `${((100 * r.overall) / r.limit).toFixed(1).padStart(8)}% | ${r.seconds.toFixed(0)}`,
    );
} finally {
  await redisServer.stop();
  await rm(dir, { recursive: true, force: true });
}

async function measure({ name, kind, headers, mode }) {
  const spec = LIMITS[kind];
  const emulator = await startEmulator({
    rateLimitHeaders: headers,
    keys: [{ key: API_KEY, credits: 1e9, limits: spec.limits }],
  });
  // Enough work for `minutes` at the limit: requests of INPUTS one-chunk documents.
  const perMinute = kind === 'rpm' ? spec.limit : spec.limit / (INPUTS * spec.words * 1.3);
  const documents = Math.ceil(perMinute * minutes * INPUTS);
  const input = join(dir, `${name}.jsonl`);
  const rand = random(name.length * 7919);
  const lines = Array.from({ length: documents }, (_, i) =>
    JSON.stringify({ id: `d${i}`, text: `${i} ${sentence(rand, spec.words)}` }),
  );
  await writeFile(input, `${lines.join('\n')}\n`);
  const out = join(dir, `${name}-out`);
  const env = { PATH: process.env.PATH, EMBEDPIPE_API_KEY: API_KEY, EMBEDPIPE_BASE_URL: emulator.baseUrl };
  const common = [
    '--input',
    input,
    '--model',
    'emu/embed-small',
    '--max-inputs',
    String(INPUTS),
    '--out',
    out,
  ];
  const started = performance.now();
  if (mode === 'run') {
    await cli(['run', ...common], env);
  } else {
    const queue = name.replace(/[^a-z0-9]/g, '');
    const workers = Array.from({ length: 3 }, () =>
      spawn(process.execPath, [CLI, 'worker', '--redis', redisUrl, '--queue', queue], {
        env,
        stdio: ['ignore', 'ignore', 'inherit'],
      }),
    );
    await cli(['enqueue', ...common, '--redis', redisUrl, '--queue', queue], env);
    while (!(await readlink(out).catch(() => undefined))) await new Promise((r) => setTimeout(r, 200));
    for (const worker of workers) worker.kill('SIGTERM');
    await Promise.all(workers.map((worker) => once(worker, 'exit')));
  }
  const seconds = (performance.now() - started) / 1000;
  const records = emulator.requests.filter((r) => r.path === '/embeddings');
  const ok = records.filter((r) => r.status === 200);
  // The steady part: after the first minute, and after the wait of the first 429 (a run that meets
  // its limit before knowing it waits out the gateway's window once, as any client would).
  const first = ok[0].at;
  const firstLimited = records.find((r) => r.status === 429);
  const afterWait = firstLimited ? ok.find((r) => r.at > firstLimited.at + 1_000)?.at : undefined;
  const from = Math.max(first + 60_000, afterWait ?? 0);
  const steady = ok.filter((r) => r.at >= from);
  const span = (ok.at(-1).at - from) / 60_000;
  const amount = steady.reduce((sum, r) => sum + (kind === 'rpm' ? 1 : r.tokens), 0);
  if (process.env.BENCH_TIMELINE) {
    // Successes (.) and 429s (x) per 10 s, from the first request.
    const slots = [];
    for (const r of records) {
      const slot = Math.floor((r.at - records[0].at) / 10_000);
      slots[slot] = (slots[slot] ?? '') + (r.status === 200 ? '.' : 'x');
    }
    console.log(
      `${name}:\n${slots.map((line, i) => `${String(i * 10).padStart(4)} s ${line ?? ''}`).join('\n')}`,
    );
  }
  await emulator.close();
  return {
    name,
    ok: ok.length,
    limited: records.filter((r) => r.status === 429).length,
    violations: Object.values(emulator.stats.retryAfterViolations).reduce((a, b) => a + b, 0),
    steady: amount / span,
    overall:
      (ok.reduce((sum, r) => sum + (kind === 'rpm' ? 1 : r.tokens), 0) * 60_000) / (ok.at(-1).at - first),
    limit: spec.limit,
    seconds,
  };
}

async function cli(args, env) {
  const stderr = await cliRun(args, env);
  // BENCH_LOGS=DIR keeps each command's log (its progress lines say what the budget paced to).
  if (process.env.BENCH_LOGS)
    await writeFile(join(process.env.BENCH_LOGS, `${args[0]}-${Date.now()}.log`), stderr);
}
