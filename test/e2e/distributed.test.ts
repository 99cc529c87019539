/**
 * Distributed mode as a user runs it: `embedpipe enqueue`, several `embedpipe worker` processes and
 * the queue commands, all the built CLI in child processes, against a private redis-server (never the
 * machine's shared one) and the emulator over real HTTP. Each test finishes a run and reads the
 * dataset back through its link with DuckDB: every valid document once, chunks 0..k-1, the
 * emulator's vectors.
 */
import { mkdir, mkdtemp, readdir, readFile, readlink, rm, writeFile } from 'node:fs/promises';
import { type AddressInfo, createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULTS } from '../../src/config/defaults.js';
import {
  EMULATOR_API_KEY,
  type EmulatorOptions,
  embeddingFor,
  type RunningEmulator,
  startEmulator,
} from '../../src/emulator/index.js';
import { lockDataset } from '../../src/output/lock.js';
import { type BatchJobData, batchJobOptions } from '../../src/queue/distributed.js';
import { type CliResult, runCli, spawnCli } from '../helpers/cli.js';
import { type HardCorpus, writeHardCsv } from '../helpers/corpus.js';
import { comparable, expectExactDataset } from '../helpers/dataset-checks.js';
import { query, readDataset, sqlString } from '../helpers/duckdb.js';
import { JPEG_1X1, png } from '../helpers/images.js';
import {
  INDEPENDENT_KEY,
  INDEPENDENT_MODEL,
  independentVector,
  startIndependentGateway,
} from '../helpers/independent-gateway.js';
import { type RedisServer, startRedisServer } from '../helpers/redis-server.js';
import { type RefusingProxy, startRefusingProxy } from '../helpers/refusing-proxy.js';

const MODEL = 'emu/embed-small'; // 384 dims, context_length 512 → chunks of at most 460 tokens
const DIMS = 384;
/** Short job locks, so a killed worker's jobs come back in seconds (the default is a minute). */
const LOCK_SECONDS = '4';

let root: string;
let corpusPath: string;
let corpus: HardCorpus;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'embedpipe-distributed-'));
  corpusPath = join(root, 'corpus.csv');
  // Long multi-chunk documents, unicode, CSV quoting, rejected rows: about 20 batches of 4.
  corpus = await writeHardCsv(corpusPath, 40, 5);
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

// Everything a test starts, stopped after it whatever happened.
const children: ReturnType<typeof spawnCli>[] = [];
const servers: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await child.result.catch(() => {});
  }
  for (const server of servers.splice(0).reverse()) await server.close();
});

async function redisServer(): Promise<RedisServer> {
  const server = await startRedisServer();
  servers.push({ close: () => server.stop() });
  return server;
}

async function emulatorWith(options: EmulatorOptions): Promise<RunningEmulator> {
  const emulator = await startEmulator({ recordRequests: false, ...options });
  servers.push(emulator);
  return emulator;
}

interface Setup {
  redis: RedisServer;
  baseUrl: string;
  key?: string;
}

const envOf = ({ baseUrl, key = EMULATOR_API_KEY }: Setup) => ({
  EMBEDPIPE_BASE_URL: baseUrl,
  EMBEDPIPE_API_KEY: key,
});

/** The plan flags shared by `enqueue` and `run`: small batches, so a run has many parts. */
const planFlags = (input: string, out: string) => [
  '--input',
  input,
  '--model',
  MODEL,
  '--out',
  out,
  '--max-inputs',
  '4',
];

interface EnqueueSummary {
  runId: string;
  version: string;
  batches: { planned: number; enqueued: number; committed: number };
}

async function enqueue(setup: Setup, input: string, out: string): Promise<EnqueueSummary> {
  const r = await runCli(
    ['enqueue', ...planFlags(input, out), '--redis', setup.redis.url, '--json'],
    envOf(setup),
  );
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as EnqueueSummary;
}

function startWorker(setup: Setup, extra: string[] = []): ReturnType<typeof spawnCli> {
  const child = spawnCli(
    ['worker', '--redis', setup.redis.url, '--concurrency', '2', '--lock-duration', LOCK_SECONDS, ...extra],
    envOf(setup),
  );
  children.push(child);
  return child;
}

/** SIGTERM: the worker finishes the jobs it has, then exits 0. */
async function stopWorker(child: ReturnType<typeof spawnCli>): Promise<CliResult> {
  child.kill('SIGTERM');
  const result = await child.result;
  expect(result.code, result.stderr).toBe(0);
  return result;
}

interface Status {
  state: string;
  paused?: string;
  planned?: number;
  done: number;
  failed: number;
  queue: Record<string, number>;
}

async function status(setup: Setup, runId: string): Promise<Status> {
  const r = await runCli(['status', runId, '--redis', setup.redis.url, '--json'], envOf(setup));
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as Status;
}

/** A check for waitFor: every batch the run enqueued is counted done. */
const everyBatchDone = (setup: Setup, run: EnqueueSummary) => async () =>
  (await status(setup, run.runId)).done === run.batches.enqueued;

async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 60_000,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

const versionDir = (out: string, version: string) => join(`${out}.versions`, version);

async function partsIn(dir: string): Promise<string[]> {
  return (await readdir(dir).catch(() => [] as string[])).filter(
    (f) => f.startsWith('part-') && f.endsWith('.parquet'),
  );
}

/** Resolves once the dataset's link points at `version` (finalize switched it). */
function switchedTo(out: string, version: string, timeoutMs = 90_000): Promise<true> {
  const target = join(`${basename(out)}.versions`, version);
  return waitFor(
    `${out} to switch to ${version}`,
    async () => (await readlink(out).catch(() => undefined)) === target,
    timeoutMs,
    200,
  );
}

/** The emulator's vectors. */
const EMULATOR_VECTORS = { vectorOf: (text: string) => embeddingFor(MODEL, text, DIMS) };

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createNetServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

describe('embedpipe enqueue + worker (BullMQ on a private Redis)', () => {
  it('survives a worker killed with SIGKILL mid-run and equals `embedpipe run` row for row', {
    timeout: 150_000,
  }, async () => {
    const redis = await redisServer();
    const emulator = await emulatorWith({ faults: { latencyMs: 250 } });
    const setup = { redis, baseUrl: emulator.baseUrl };
    const out = join(root, 'killed');
    const run = await enqueue(setup, corpusPath, out);
    expect(run.batches.enqueued).toBeGreaterThan(15);
    const dir = versionDir(out, run.version);

    const doomed = startWorker(setup);
    const survivor = startWorker(setup);
    await waitFor('a few parts', async () => (await partsIn(dir)).length >= 4);
    await waitFor('requests in flight', () => emulator.stats.inFlight >= 2, 10_000, 5);
    // Mid-run, with jobs in flight: they stay locked to the dead worker until their lock lapses.
    doomed.kill('SIGKILL');
    expect((await doomed.result).signal).toBe('SIGKILL');
    expect((await partsIn(dir)).length).toBeLessThan(run.batches.enqueued);
    const fresh = startWorker(setup);

    // Nobody calls finalize: the last job queues it, and it switches the link.
    await switchedTo(out, run.version);
    const rows = await readDataset(out);
    expectExactDataset(rows, corpus.valid, EMULATOR_VECTORS);
    const final = await status(setup, run.runId);
    expect(final).toMatchObject({ state: 'done', planned: run.batches.enqueued, failed: 0 });
    expect(final.done).toBe(run.batches.enqueued);

    // The same input and flags through `embedpipe run`: the same dataset, row for row.
    const local = join(root, 'killed-local');
    const r = await runCli(['run', ...planFlags(corpusPath, local), '--json'], envOf(setup));
    expect(r.code, r.stderr).toBe(0);
    expect(comparable(rows)).toEqual(comparable(await readDataset(local)));
    const counts = async (dir: string) => {
      const { documents, chunks, rejects, failures, rows, tokens, costUsd } = JSON.parse(
        await readFile(join(dir, '_manifest.json'), 'utf8'),
      ).counts;
      return { documents, chunks, rejects, failures, rows, tokens, costUsd };
    };
    expect(await counts(out)).toEqual(await counts(local));
    expect(await readFile(join(out, '_rejects.jsonl'), 'utf8')).toBe(
      await readFile(join(local, '_rejects.jsonl'), 'utf8'),
    );

    await stopWorker(survivor);
    await stopWorker(fresh);
  });

  it('keeps a frozen worker that wakes after its jobs were redone from adding rows twice', {
    timeout: 120_000,
  }, async () => {
    const redis = await redisServer();
    const emulator = await emulatorWith({ faults: { latencyMs: 300 } });
    const setup = { redis, baseUrl: emulator.baseUrl };
    const out = join(root, 'frozen');
    const run = await enqueue(setup, corpusPath, out);
    const frozen = startWorker(setup);
    await waitFor('requests in flight', () => emulator.stats.inFlight >= 2, 20_000, 5);
    // A long GC pause, a frozen VM: its jobs' locks lapse and another worker does them again.
    frozen.kill('SIGSTOP');
    const other = startWorker(setup);
    await switchedTo(out, run.version);
    const rows = await readDataset(out);
    expectExactDataset(rows, corpus.valid, EMULATOR_VECTORS);
    // The frozen worker wakes up and finishes what it was doing: the dataset must not change.
    frozen.kill('SIGCONT');
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(await partsIn(out)).toEqual([]);
    expect(comparable(await readDataset(out))).toEqual(comparable(rows));
    const woken = await stopWorker(frozen);
    expect(woken.stderr).toMatch(/lost the lock of job/);
    await stopWorker(other);
  });

  it('adds nothing when the same job is enqueued twice, and writes no row twice', {
    timeout: 90_000,
  }, async () => {
    const redis = await redisServer();
    const emulator = await emulatorWith({});
    const setup = { redis, baseUrl: emulator.baseUrl };
    const out = join(root, 'twice');
    const first = await enqueue(setup, corpusPath, out);
    const before = await status(setup, first.runId);
    expect(before.queue['waiting']).toBe(first.batches.enqueued);

    const second = await enqueue(setup, corpusPath, out);
    expect(second.runId).toBe(first.runId);
    expect(second.version).toBe(first.version);
    const after = await status(setup, first.runId);
    expect(after.queue).toEqual(before.queue);
    expect(after.planned).toBe(first.batches.enqueued);
    // Finalize by hand before the work is done: it waits, and changes nothing.
    const early = await runCli(['finalize', first.runId, '--redis', redis.url], envOf(setup));
    expect(early.code, early.stderr).toBe(0);
    expect(early.stdout).toMatch(new RegExp(`${first.batches.enqueued} batches are still in the queue`));

    // Someone else holds the dataset's lock while the last job queues finalize (as the producer
    // does until it exits, or a `finalize` by hand): finalize waits its turn, then switches.
    const held = await lockDataset(`${out}.versions`);
    const worker = startWorker(setup);
    await waitFor('every batch to be done', everyBatchDone(setup, first), 60_000, 300);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(await readlink(out).catch(() => undefined)).toBeUndefined();
    await held.release();
    await switchedTo(out, first.version, 20_000);
    const rows = await readDataset(out);
    const keys = rows.map((r) => `${r.id}#${r.chunk_index}`);
    expect(new Set(keys).size).toBe(keys.length);
    expectExactDataset(rows, corpus.valid, EMULATOR_VECTORS);
    // The producer recorded where its batches start, for the next night's packing.
    const starts = (await readFile(join(out, '_batch-starts.jsonl'), 'utf8')).trim().split('\n');
    expect(starts.length - 1).toBe(first.batches.enqueued);

    // The next night, nothing changed: the new version needs no job, and the producer queues its
    // finalize itself, which the waiting worker runs at once.
    const started = Date.now();
    const unchanged = await enqueue(setup, corpusPath, out);
    expect(unchanged).toMatchObject({ version: 'v000002', batches: { enqueued: 0 } });
    await switchedTo(out, unchanged.version, 20_000);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(comparable(await readDataset(out))).toEqual(comparable(rows));
    await stopWorker(worker);
  });

  it('a job delivered again after its batch was committed neither pays nor writes twice', {
    timeout: 90_000,
  }, async () => {
    const redis = await redisServer();
    const emulator = await emulatorWith({});
    const setup = { redis, baseUrl: emulator.baseUrl };
    const out = join(root, 'redelivered');
    const run = await enqueue(setup, corpusPath, out);
    const dir = versionDir(out, run.version);
    const { queue: name, prefix } = DEFAULTS.distributed;
    const connection = new Redis(redis.url, { maxRetriesPerRequest: null });
    const queue = new Queue(name, { connection, prefix });
    try {
      // What BullMQ hands out again when a worker dies after its commit, before the job completes.
      const [counted, uncounted] = (await queue.getJobs(['waiting'], 0, 1)).map((job) => ({
        id: job.id!,
        data: job.data as BatchJobData,
      }));
      const deliverAgain = async (job: typeof counted) => {
        await queue.add('batch', job!.data, { ...batchJobOptions(), jobId: job!.id });
        await waitFor('the job to finish', async () => (await queue.getJob(job!.id)) === undefined);
      };

      // Finalize held by the lock: every part is written, none compacted yet.
      const held = await lockDataset(`${out}.versions`);
      const first = startWorker(setup);
      const allDone = everyBatchDone(setup, run);
      await waitFor('every batch to be done', allDone, 60_000, 300);
      await stopWorker(first);
      // Delivered again to another worker, which has not seen these batches' vectors.
      const worker = startWorker(setup);
      const requests = emulator.stats.requests;
      // The second one died after renaming its part into place, before counting it.
      const runKey = `${prefix}:${name}:run:${run.runId}`;
      await connection.srem(`${runKey}:done`, uncounted!.data.batch.batchId);
      await connection.hincrby(runKey, 'inputs', -uncounted!.data.batch.chunks.length);
      await deliverAgain(counted);
      await deliverAgain(uncounted);
      await waitFor('every batch to be counted again', allDone, 20_000, 300);
      expect(emulator.stats.requests).toBe(requests);
      expect(await partsIn(dir)).toHaveLength(run.batches.enqueued);

      await held.release();
      await switchedTo(out, run.version, 20_000);
      // After the switch (its part compacted away): nothing is sent, no part comes back.
      await deliverAgain(counted);
      await stopWorker(worker);
      expect(emulator.stats.requests).toBe(requests);
      expect(await partsIn(dir)).toEqual([]);
      const rows = await readDataset(out);
      expectExactDataset(rows, corpus.valid, EMULATOR_VECTORS);
      // Usage counted once per batch, the re-counted one from its part's own record.
      expect((await status(setup, run.runId)) as unknown).toMatchObject({ inputs: rows.length });
    } finally {
      await queue.close();
      connection.disconnect();
    }
  });

  it('honours every Retry-After of a 429 storm across three workers and a producer', {
    timeout: 120_000,
  }, async () => {
    const redis = await redisServer();
    const emulator = await emulatorWith({
      faults: { seed: 11, probabilities: { 429: 0.3 }, retryAfterSeconds: 1, latencyMs: 20 },
    });
    const setup = { redis, baseUrl: emulator.baseUrl };
    const out = join(root, 'storm');
    const run = await enqueue(setup, corpusPath, out);
    const ports = [await freePort(), await freePort(), await freePort()];
    const workers = ports.map((port) => startWorker(setup, ['--metrics-port', String(port)]));
    // A second dataset enqueued on the same key mid-storm: its producer's requests (calibration)
    // wait out the workers' Retry-After too.
    await waitFor('a few parts', async () => (await partsIn(versionDir(out, run.version))).length >= 3);
    const otherOut = join(root, 'storm-other');
    const other = await enqueue(setup, corpusPath, otherOut);

    await switchedTo(out, run.version);
    await switchedTo(otherOut, other.version);
    expectExactDataset(await readDataset(out), corpus.valid, EMULATOR_VECTORS);
    expectExactDataset(await readDataset(otherOut), corpus.valid, EMULATOR_VECTORS);
    expect(emulator.stats.faults['429'] ?? 0).toBeGreaterThanOrEqual(5);
    // No request arrived before the instant a 429 named (requests already on their way when it
    // went out, within the emulator's grace, are not counted).
    expect(emulator.stats.retryAfterViolations).toEqual({});
    // Every 429 a worker got was retried once, and its metrics say so.
    let rateLimited = 0;
    let retries = 0;
    const worked = { inputs: 0, tokens: 0, cost: 0 };
    const metric = (text: string, name: string) =>
      Number(new RegExp(`^${name} ([0-9.e+-]+)$`, 'm').exec(text)?.[1]);
    for (const port of ports) {
      const text = await fetch(`http://127.0.0.1:${port}/metrics`).then((r) => r.text());
      rateLimited += metric(text, 'embedpipe_rate_limited_total');
      retries += metric(text, 'embedpipe_http_retries_total');
      worked.inputs += metric(text, 'embedpipe_inputs_total');
      worked.tokens += metric(text, 'embedpipe_tokens_total');
      worked.cost += metric(text, 'embedpipe_cost_usd_total');
    }
    expect(rateLimited).toBeGreaterThan(0);
    expect(retries).toBe(rateLimited);
    // One ledger: `status`, the Redis counters and the workers' metrics are folds of the batch
    // records the manifest folds (two fresh versions: every record is this run's).
    const ledger = { inputs: 0, tokens: 0, cost: 0, retries: 0 };
    for (const [r, dir] of [
      [run, out],
      [other, otherOut],
    ] as const) {
      const { counts } = JSON.parse(await readFile(join(dir, '_manifest.json'), 'utf8'));
      const finished = await waitFor('the run to say done', async () => {
        const s = (await status(setup, r.runId)) as Status & Record<string, unknown>;
        return s.state === 'done' ? s : undefined;
      });
      expect(finished['dataset']).toEqual(counts);
      expect(finished['inputs']).toBe(counts.rows);
      expect(finished['tokens']).toBe(counts.tokens);
      expect(Number(finished['costUsd'])).toBeCloseTo(Number(counts.costUsd), 9);
      ledger.inputs += counts.rows;
      ledger.tokens += counts.tokens;
      ledger.cost += Number(counts.costUsd);
      ledger.retries += counts.retries;
    }
    expect(worked.inputs).toBe(ledger.inputs);
    expect(worked.tokens).toBe(ledger.tokens);
    expect(worked.cost).toBeCloseTo(ledger.cost, 9);
    expect(retries).toBe(ledger.retries);
    for (const worker of workers) await stopWorker(worker);
  });

  it('pauses the queue on 402 and completes after `resume`', { timeout: 120_000 }, async () => {
    const redis = await redisServer();
    const key = 'credit-limited-key-0001';
    // The whole run costs about $0.0004 at the emulator (its token count, not the planner's):
    // enough credit for the calibration and a part of the corpus only.
    const emulator = await emulatorWith({ keys: [{ key, credits: 0.00015 }] });
    const setup = { redis, baseUrl: emulator.baseUrl, key };

    const out = join(root, 'credits');
    const run = await enqueue(setup, corpusPath, out);
    const workers = [startWorker(setup), startWorker(setup)];
    // Paused as soon as one job met the 402; the jobs still in flight meet it too, then wait.
    const paused = await waitFor(
      'the run to pause, no job left active',
      async () => {
        const s = await status(setup, run.runId);
        return s.state === 'paused' && s.queue['active'] === 0 ? s : undefined;
      },
      60_000,
      300,
    );
    expect(paused.paused).toMatch(/credits exhausted/);
    expect(paused.done).toBeLessThan(run.batches.enqueued);
    expect(await readlink(out).catch(() => undefined)).toBeUndefined();
    // Paused means paused: no worker sends anything more.
    const requestsWhenPaused = emulator.stats.requests;
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(emulator.stats.requests).toBe(requestsWhenPaused);

    emulator.reset({ recordRequests: false, keys: [{ key, credits: 100 }] });
    const resumed = await runCli(['resume', run.runId, '--redis', redis.url], envOf(setup));
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toMatch(/resumed.*credits exhausted/);

    await switchedTo(out, run.version);
    expectExactDataset(await readDataset(out), corpus.valid, EMULATOR_VECTORS);
    expect(await status(setup, run.runId)).toMatchObject({ state: 'done', failed: 0 });
    for (const worker of workers) expect((await stopWorker(worker)).stderr).not.toContain(key);
  });

  it('completes a run through a Redis restart', { timeout: 120_000 }, async () => {
    const redis = await redisServer();
    const emulator = await emulatorWith({ faults: { latencyMs: 300 } });
    const setup = { redis, baseUrl: emulator.baseUrl };
    const out = join(root, 'restart');
    const run = await enqueue(setup, corpusPath, out);
    const dir = versionDir(out, run.version);
    const workers = [startWorker(setup), startWorker(setup)];
    await waitFor('a few parts', async () => (await partsIn(dir)).length >= 4);
    await redis.restart();
    expect((await partsIn(dir)).length).toBeLessThan(run.batches.enqueued);

    await switchedTo(out, run.version);
    expectExactDataset(await readDataset(out), corpus.valid, EMULATOR_VECTORS);
    expect(await status(setup, run.runId)).toMatchObject({ state: 'done', failed: 0 });
    for (const worker of workers) await stopWorker(worker);
  });

  it('serves /metrics, and on SIGTERM finishes its jobs and exits 0', { timeout: 120_000 }, async () => {
    const redis = await redisServer();
    const emulator = await emulatorWith({ faults: { latencyMs: 400 } });
    const setup = { redis, baseUrl: emulator.baseUrl };
    const port = await freePort();
    // The worker first, waiting for work, as in production.
    const worker = startWorker(setup, ['--metrics-port', String(port)]);
    const out = join(root, 'metrics');
    const run = await enqueue(setup, corpusPath, out);
    const dir = versionDir(out, run.version);

    const metrics = await waitFor('completed jobs in /metrics', async () => {
      const text = await fetch(`http://127.0.0.1:${port}/metrics`)
        .then((r) => r.text())
        .catch(() => '');
      const completed = /^embedpipe_jobs_total\{status="completed"\} (\d+)/m.exec(text);
      return completed && Number(completed[1]) >= 2 ? text : undefined;
    });
    expect(metrics).toMatch(/^# TYPE embedpipe_jobs_total counter$/m);
    expect(metrics).toMatch(/^embedpipe_inputs_total \d+/m);
    expect(metrics).toMatch(/^embedpipe_tokens_total \d+/m);
    expect(metrics).toMatch(/^embedpipe_cost_usd_total [\d.e-]+/m);
    expect(metrics).toMatch(/^embedpipe_request_duration_seconds_bucket\{le="0.5"\} \d+/m);
    expect(metrics).toMatch(/^embedpipe_jobs_total\{status="failed"\} 0$/m);

    // SIGTERM with requests in flight: they are answered and committed before the worker exits.
    await waitFor('a request in flight', () => emulator.stats.inFlight > 0, 10_000, 5);
    const stopped = await stopWorker(worker);
    expect(stopped.stderr).toMatch(/worker stopped/);
    expect(emulator.stats.inFlight).toBe(0);
    const afterStop = await status(setup, run.runId);
    expect(afterStop.queue['active']).toBe(0);
    expect(afterStop.failed).toBe(0);
    expect(afterStop.done).toBe((await partsIn(dir)).length);
    expect(afterStop.done).toBeLessThan(run.batches.enqueued);

    // Nothing was lost: another worker finishes the run, and its metrics add up.
    const nextPort = await freePort();
    const next = startWorker(setup, ['--metrics-port', String(nextPort)]);
    await switchedTo(out, run.version);
    expectExactDataset(await readDataset(out), corpus.valid, EMULATOR_VECTORS);
    const idle = await fetch(`http://127.0.0.1:${nextPort}/metrics`).then((r) => r.text());
    expect(idle).toMatch(
      new RegExp(
        `^embedpipe_jobs_total\\{status="completed"\\} ${run.batches.enqueued - afterStop.done}$`,
        'm',
      ),
    );
    expect(idle).toMatch(/^embedpipe_jobs_active 0$/m);
    await stopWorker(next);
  });

  describe('a batch the gateway refuses for good', () => {
    let proxy: RefusingProxy;
    let proxyUrl: string;
    let upstream: RunningEmulator;
    /** A request whose every input holds this marker is refused with 400 (while `refusing`). */
    const MARKER = 'ZZREFUSED';
    let refusing = false;
    /** The embedder's probes (a plain input, after 400s in a row: refused inputs or a refusing gateway?). */
    let probes = 0;

    beforeAll(async () => {
      upstream = await startEmulator({ recordRequests: false });
      proxy = await startRefusingProxy(upstream.baseUrl, (input) => {
        if (input.length === 1 && input[0] === 'embedpipe probe') probes += 1;
        return refusing && input.every((t) => t.includes(MARKER));
      });
      proxyUrl = proxy.baseUrl;
    });
    afterAll(async () => {
      await proxy.close();
      await upstream.close();
    });

    it('status, finalize (exit 5, link unchanged) and retry-failed complete the run', {
      timeout: 120_000,
    }, async () => {
      const redis = await redisServer();
      const setup = { redis, baseUrl: proxyUrl };
      // One-chunk documents, packed 4 to a batch in order. The first version has d00–d23; the
      // second inserts a document after d00 (the first batches move: workers must reuse the old
      // vectors from the current version, not re-send them; from d04 on the packing is back in
      // step with the first version's batch starts) and changes d12–d19 to hold the marker: two
      // whole batches of marked inputs.
      const doc = (i: number, marked = false) => ({
        id: `d${String(i).padStart(2, '0')}`,
        text: `document ${i} about the harbor and the meadow${marked ? ` ${MARKER}` : ''}`,
      });
      const docsV1 = Array.from({ length: 24 }, (_, i) => doc(i));
      const changed = Array.from({ length: 24 }, (_, i) => doc(i, i >= 12 && i <= 19));
      const docsV2 = [changed[0]!, { id: 'dnew', text: 'a new document about tea' }, ...changed.slice(1)];
      const write = (path: string, list: Array<{ id: string; text: string }>) =>
        writeFile(path, `${list.map((d) => JSON.stringify(d)).join('\n')}\n`);
      const before = join(root, 'refused-v1.jsonl');
      const after = join(root, 'refused-v2.jsonl');
      await write(before, docsV1);
      await write(after, docsV2);
      const out = join(root, 'refused');
      const first = await runCli(['run', ...planFlags(before, out)], envOf(setup));
      expect(first.code, first.stderr).toBe(0);
      const link = await readlink(out);
      const rowsBefore = await readDataset(out);

      const run = await enqueue(setup, after, out);
      expect(run.version).toBe('v000002');
      const inputsBefore = upstream.stats.inputs;
      const probesBefore = probes;
      refusing = true;
      const worker = startWorker(setup);
      const failed = await waitFor(
        'the run to end incomplete',
        async () => {
          const s = await status(setup, run.runId);
          return s.state === 'incomplete' ? s : undefined;
        },
        60_000,
        300,
      );
      expect(failed).toMatchObject({ failed: 2, planned: run.batches.enqueued });
      expect(failed.done).toBe(run.batches.enqueued - 2);
      expect(failed.queue['failed']).toBe(2);
      const table = await runCli(['status', '--redis', redis.url], envOf(setup));
      expect(table.code, table.stderr).toBe(0);
      expect(table.stdout).toMatch(
        new RegExp(`^${run.runId}\\s+incomplete\\s+${run.batches.enqueued}\\s+`, 'm'),
      );
      expect(table.stdout).toMatch(/^queue: 0 waiting, 0 in flight, 0 delayed, 2 failed$/m);

      const finalize = await runCli(['finalize', run.runId, '--redis', redis.url], envOf(setup));
      expect(finalize.code, finalize.stderr).toBe(5);
      expect(finalize.stdout).toMatch(/2 batches failed for good.*not current.*retry-failed/);
      expect(await readlink(out)).toBe(link);
      expect(comparable(await readDataset(out))).toEqual(comparable(rowsBefore));

      refusing = false;
      const retried = await runCli(['retry-failed', run.runId, '--redis', redis.url], envOf(setup));
      expect(retried.code, retried.stderr).toBe(0);
      expect(retried.stdout).toMatch(/2 failed batches queued again/);
      await switchedTo(out, run.version);
      expectExactDataset(
        await readDataset(out),
        new Map(docsV2.map((d) => [d.id, d.text])),
        EMULATOR_VECTORS,
      );
      expect(await status(setup, run.runId)).toMatchObject({ state: 'done', failed: 0 });
      // Nothing left to retry: a second retry-failed changes nothing.
      const again = await runCli(['retry-failed', run.runId, '--redis', redis.url], envOf(setup));
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).toMatch(/0 failed batches queued again/);
      expect(await status(setup, run.runId)).toMatchObject({ state: 'done', failed: 0 });
      // Only the new and changed texts reached the gateway; the others' vectors were reused.
      expect(upstream.stats.inputs - inputsBefore - (probes - probesBefore)).toBe(9);
      await stopWorker(worker);
    });
  });

  it('images go through the queue like text: the same dataset as `run`, image columns included', async () => {
    const redis = await redisServer();
    const emulator = await emulatorWith({});
    const setup: Setup = { redis, baseUrl: emulator.baseUrl };
    const folder = join(root, 'images');
    await mkdir(folder, { recursive: true });
    for (let i = 0; i < 6; i++) {
      await writeFile(join(folder, `p${i}.png`), png(1, 1, [i * 40, 30, 60]));
      await writeFile(join(folder, `p${i}.txt`), `caption number ${i}`);
    }
    await writeFile(join(folder, 'photo.jpg'), JPEG_1X1);
    const flags = (out: string) => [
      '--input',
      folder,
      '--model',
      'emu/vision-embed',
      '--out',
      out,
      '--max-inputs',
      '2',
    ];
    const out = join(root, 'images-queued');
    const enqueued = await runCli(['enqueue', ...flags(out), '--redis', redis.url, '--json'], envOf(setup));
    expect(enqueued.code, enqueued.stderr).toBe(0);
    const worker = startWorker(setup);
    await waitFor('the switch', () => readlink(out).catch(() => undefined));
    await stopWorker(worker);
    const local = join(root, 'images-local');
    const ran = await runCli(['run', ...flags(local)], envOf(setup));
    expect(ran.code, ran.stderr).toBe(0);
    const rows = async (dir: string) =>
      JSON.stringify(
        await query(
          `SELECT id, chunk_index, text, image_source, image_sha256, content_hash, embedding::VARCHAR AS e
             FROM read_parquet(${sqlString(`${dir}/*.parquet`)}) ORDER BY id`,
        ),
      );
    const queued = await rows(out);
    expect(JSON.parse(queued)).toHaveLength(7);
    expect(queued).toBe(await rows(local));
  });

  it('--dims and --vector-type go through the queue: the same columns and values as `run`', async () => {
    const redis = await redisServer();
    const emulator = await emulatorWith({});
    const setup: Setup = { redis, baseUrl: emulator.baseUrl };
    const form = ['--dims', '16', '--vector-type', 'int8,binary'];
    const out = join(root, 'form-queued');
    const enqueued = await runCli(
      ['enqueue', ...planFlags(corpusPath, out), ...form, '--redis', redis.url, '--json'],
      envOf(setup),
    );
    expect(enqueued.code, enqueued.stderr).toBe(0);
    const worker = startWorker(setup);
    await waitFor('the switch', () => readlink(out).catch(() => undefined));
    await stopWorker(worker);
    const local = join(root, 'form-local');
    const ran = await runCli(['run', ...planFlags(corpusPath, local), ...form], envOf(setup));
    expect(ran.code, ran.stderr).toBe(0);
    const rows = async (dir: string) =>
      JSON.stringify(
        await query(
          `SELECT id, chunk_index, len(embedding)::INTEGER AS dims, embedding::VARCHAR AS e, embedding_int8::VARCHAR AS q,
                  embedding_int8_scale AS s, hex(embedding_binary) AS b
             FROM read_parquet(${sqlString(`${dir}/*.parquet`)}) ORDER BY id, chunk_index`,
        ),
      );
    const queued = await rows(out);
    expect(JSON.parse(queued)[0]).toMatchObject({ dims: 16 });
    expect(queued).toBe(await rows(local));
    const verified = await runCli(['verify', out, '--deep']);
    expect(verified.code, verified.stdout + verified.stderr).toBe(0);
  });

  it("a job file's gateway.timeoutMs reaches the workers: their requests have the run's deadline", {
    timeout: 60_000,
  }, async () => {
    const redis = await redisServer();
    // The producer plans against a prompt gateway; the worker's answers take 3 s, and the job allows
    // 200 ms a request and one attempt.
    const setup: Setup = { redis, baseUrl: (await emulatorWith({})).baseUrl };
    const slow: Setup = { redis, baseUrl: (await emulatorWith({ faults: { latencyMs: 3000 } })).baseUrl };
    const job = join(root, 'deadline.json');
    const out = join(root, 'deadline');
    await writeFile(
      job,
      JSON.stringify({
        input: { path: corpusPath },
        model: MODEL,
        output: { dir: out },
        gateway: { timeoutMs: 200 },
        retry: { maxAttempts: 1 },
        batching: { maxInputs: 4 },
      }),
    );
    const enqueued = await runCli(['enqueue', job, '--redis', redis.url, '--json'], envOf(setup));
    expect(enqueued.code, enqueued.stderr).toBe(0);
    const worker = startWorker(slow);
    let stderr = '';
    worker.stderr?.on('data', (d: Buffer | string) => {
      stderr += d.toString();
    });
    // The client's own default is 120 s: only the run's deadline fails a request this soon.
    await waitFor(
      "a request cut at the run's deadline",
      () => /no complete response within 200 ms/.test(stderr),
      20_000,
    );
    await stopWorker(worker);
    expect(await readlink(out).catch(() => undefined)).toBeUndefined();
  });

  it('against an independent server with faults: three workers, five SIGKILLs at random moments, every document once', {
    timeout: 240_000,
  }, async () => {
    const redis = await redisServer();
    const gateway = await startIndependentGateway();
    servers.push(gateway);
    const setup: Setup = { redis, baseUrl: gateway.baseUrl, key: INDEPENDENT_KEY };
    const out = join(root, 'independent-killed');
    // This server lists no context length and refuses inputs over 4,000 of its tokens: `run` learns
    // that from its 400s and re-plans, but a worker never re-plans (a document's chunks are in other
    // jobs), so the chunk budget is given, as docs/distributed.md's limits say.
    const flags = [
      ...['--input', corpusPath, '--model', INDEPENDENT_MODEL, '--out', out],
      ...['--max-inputs', '2', '--max-tokens', '1000'],
    ];
    const enqueued = await runCli(['enqueue', ...flags, '--redis', redis.url, '--json'], envOf(setup));
    expect(enqueued.code, enqueued.stderr).toBe(0);
    const workers = [startWorker(setup), startWorker(setup), startWorker(setup)];
    let peak = 0;
    const sample = setInterval(() => {
      void redis.info('memory').then((info) => {
        peak = Math.max(peak, Number(info['used_memory'] ?? 0));
      });
    }, 100);
    // Five kills at random moments (seeded), each worker replaced at once.
    let seed = 7;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let kill = 0; kill < 5 && !(await readlink(out).catch(() => undefined)); kill++) {
      await new Promise((resolve) => setTimeout(resolve, 300 + random() * 900));
      const victim = Math.floor(random() * workers.length);
      workers[victim]!.kill('SIGKILL');
      await workers[victim]!.result;
      workers[victim] = startWorker(setup);
    }
    await waitFor('the switch', () => readlink(out).catch(() => undefined), 180_000);
    clearInterval(sample);
    for (const worker of workers) await stopWorker(worker);
    const rows = await readDataset(out);
    expectExactDataset(rows, corpus.valid, { vectorOf: independentVector });
    expect(gateway.stats.faults).toBeGreaterThan(0);
    expect(gateway.violations).toEqual([]);
    // Bounded: the high-water mark keeps Redis small whatever happens to the workers.
    expect(peak).toBeLessThan(64 * 2 ** 20);
  });
});

describe('Redis outages', () => {
  const lines = (text: string, pattern: RegExp) => text.split('\n').filter((line) => pattern.test(line));

  it('a worker pointed at a Redis that is not there: one line, exit 10, at once', async () => {
    const port = await freePort();
    const started = Date.now();
    const result = await runCli(['worker', '--redis', `redis://127.0.0.1:${port}`], {
      EMBEDPIPE_BASE_URL: 'http://127.0.0.1:9/v1',
      EMBEDPIPE_API_KEY: EMULATOR_API_KEY,
    });
    expect(result.code, result.stderr).toBe(10);
    expect(Date.now() - started).toBeLessThan(8_000);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(/cannot reach Redis at redis:\/\/127\.0\.0\.1:\d+/);
  });

  it('enqueue and workers ride out a Redis restart: one line each way, nothing lost', {
    timeout: 150_000,
  }, async () => {
    const redis = await redisServer();
    const emulator = await emulatorWith({ faults: { latencyMs: 150 } });
    const setup = { redis, baseUrl: emulator.baseUrl };
    const input = join(root, 'outage.csv');
    const big = await writeHardCsv(input, 160, 21);
    const out = join(root, 'outage');
    const producer = spawnCli(
      ['enqueue', ...planFlags(input, out), '--redis', redis.url, '--high-water', '2', '--json'],
      envOf(setup),
    );
    children.push(producer);
    // Its job locks outlast the outage, as the default minute does in production.
    const worker = startWorker(setup, ['--lock-duration', '30']);
    // Once the producer waits on backpressure and the worker is embedding, Redis goes for 3 s.
    await waitFor('the producer planning ahead', async () => {
      const r = await runCli(['status', '--redis', redis.url, '--json'], envOf(setup));
      const run =
        r.code === 0 ? (JSON.parse(r.stdout).runs?.[0] as Record<string, number> | undefined) : undefined;
      return run && (run['enqueued'] ?? 0) >= 32 && (run['done'] ?? 0) >= 2 ? run : undefined;
    });
    const mid = JSON.parse((await runCli(['status', '--redis', redis.url, '--json'], envOf(setup))).stdout)
      .runs[0];
    expect(mid.state).toBe('enqueueing');
    expect(mid.plannedEstimate).toBeGreaterThanOrEqual(mid.plannedSoFar);
    await redis.outage(3_000);
    const produced = await producer.result;
    expect(produced.code, produced.stderr).toBe(0);
    const run = JSON.parse(produced.stdout) as EnqueueSummary;
    await switchedTo(out, run.version);
    expectExactDataset(await readDataset(out), big.valid, EMULATOR_VECTORS);
    const stopped = await stopWorker(worker);
    for (const log of [produced.stderr, stopped.stderr]) {
      expect(lines(log, /lost Redis/)).toHaveLength(1);
      expect(lines(log, /Redis is back/)).toHaveLength(1);
      expect(
        lines(log, /"level":(40|50)/).length,
        lines(log, /"level":(40|50)/).join('\n'),
      ).toBeLessThanOrEqual(2);
    }
  });

  it('a producer that loses Redis past --redis-wait stops with exit 10 in one line; status says it is gone', {
    timeout: 60_000,
  }, async () => {
    const redis = await redisServer();
    const emulator = await emulatorWith({});
    const setup = { redis, baseUrl: emulator.baseUrl };
    const input = join(root, 'gone.csv');
    await writeHardCsv(input, 160, 22);
    const out = join(root, 'gone');
    const producer = spawnCli(
      ['enqueue', ...planFlags(input, out), '--redis', redis.url, '--high-water', '2', '--redis-wait', '2'],
      envOf(setup),
    );
    children.push(producer);
    // No worker: the producer waits on backpressure after its first jobs.
    const blocked = await waitFor('the producer waiting on backpressure', async () => {
      const r = await runCli(['status', '--redis', redis.url, '--json'], envOf(setup));
      const run =
        r.code === 0 ? (JSON.parse(r.stdout).runs?.[0] as Record<string, unknown> | undefined) : undefined;
      return run && (run['enqueued'] as number) >= 32 ? run : undefined;
    });
    const outage = redis.outage(5_000);
    const result = await producer.result;
    await outage;
    expect(result.code, result.stderr).toBe(10);
    expect(result.stderr).toMatch(/unreachable for \d+ s: the producer stopped.*re-run the same command/);
    expect(result.stderr).not.toMatch(/^\s+at /m);
    const gone = await waitFor(
      'status to call the producer gone',
      async () => {
        const s = await status(setup, blocked['runId'] as string);
        return s.state === 'producer gone' ? s : undefined;
      },
      20_000,
      500,
    );
    expect(gone).toMatchObject({ state: 'producer gone' });
  });
});
