/**
 * `embedpipe run` (the built CLI, a child process) under rate limits and off a terminal, against the
 * emulator over real HTTP: progress lines in a redirected stderr, a requests-per-minute limit met as
 * a steady state (exit 0, no Retry-After broken), and 20% of requests answered 429 + Retry-After: 1
 * with zero violations.
 */

import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  EMULATOR_API_KEY,
  type EmulatorOptions,
  type RunningEmulator,
  startEmulator,
} from '../../src/emulator/index.js';
import { CLI, cleanEnv, runArgs } from '../helpers/cli.js';
import { tempFolder } from '../helpers/temp.js';

const MODEL = 'emu/embed-small';
const root = await tempFolder('embedpipe-ratelimit-');
let corpusPath: string;
const emulators: RunningEmulator[] = [];

beforeAll(async () => {
  corpusPath = join(root, 'docs.csv');
  const rows = ['id,text'];
  for (let i = 0; i < 500; i++)
    rows.push(`doc-${i},"Document ${i} talks about topic ${i % 17} in a few plain words."`);
  await writeFile(corpusPath, `${rows.join('\n')}\n`);
});
afterAll(async () => {
  await Promise.all(emulators.map((e) => e.close()));
});

async function emulatorWith(options: EmulatorOptions): Promise<RunningEmulator> {
  const emulator = await startEmulator(options);
  emulators.push(emulator);
  return emulator;
}

/** Runs the CLI with stderr redirected to a file, as `2> log` does; resolves with the exit code and the log. */
function runToLog(args: string[], env: Record<string, string>, log: string) {
  const fd = openSync(log, 'w');
  const child = spawn(process.execPath, [CLI, ...args], {
    env: cleanEnv(env),
    stdio: ['ignore', 'ignore', fd],
  });
  closeSync(fd);
  const started = Date.now();
  return new Promise<{ code: number | null; log: string; ms: number }>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, log: readFileSync(log, 'utf8'), ms: Date.now() - started }));
  });
}

const records = (log: string) =>
  log
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map(
      (line) =>
        JSON.parse(line) as {
          msg: string;
          level: number;
          until?: string;
          progress?: Record<string, unknown>;
        },
    );

const argsFor = (out: string, extra: string[] = []) =>
  runArgs(corpusPath, MODEL, '--out', out, '--max-inputs', '16', ...extra);

describe.concurrent('the CLI under rate limits, stderr to a file', () => {
  it('writes structured progress lines at the interval while it runs', async () => {
    const emulator = await emulatorWith({ recordRequests: false, faults: { latencyMs: 250 } });
    const { code, log } = await runToLog(
      argsFor(join(root, 'progress'), ['--concurrency', '2']),
      {
        EMBEDPIPE_BASE_URL: emulator.baseUrl,
        EMBEDPIPE_API_KEY: EMULATOR_API_KEY,
        EMBEDPIPE_PROGRESS_INTERVAL_MS: '500',
      },
      join(root, 'progress.log'),
    );
    expect(code).toBe(0);
    const progress = records(log).filter((r) => r.msg === 'progress');
    expect(progress.length).toBeGreaterThanOrEqual(4);
    const last = progress.at(-1)!.progress!;
    expect(last).toMatchObject({ documents: 500, percent: 100, batchesPlanned: expect.any(Number) });
    for (const field of ['vectors', 'tokens', 'cost', 'vectorsPerSecond', 'tokensPerSecond', 'etaS']) {
      expect(last).toHaveProperty(field);
    }
    expect(log).not.toContain('\r');
  }, 60_000);

  it('finishes at about a requests-per-minute limit, exit 0, with no Retry-After broken', async () => {
    const perMinute = 30;
    const emulator = await emulatorWith({
      keys: [{ key: EMULATOR_API_KEY, name: 'limited', limits: { requestsPerMinute: perMinute } }],
      faults: { latencyMs: { min: 200, max: 400 } },
    });
    // One attempt only: a 429 with Retry-After is pacing and must not spend it.
    const { code, log, ms } = await runToLog(
      argsFor(join(root, 'rpm'), ['--max-attempts', '1']),
      { EMBEDPIPE_BASE_URL: emulator.baseUrl, EMBEDPIPE_API_KEY: EMULATOR_API_KEY },
      join(root, 'rpm.log'),
    );
    const embeds = emulator.requests.filter((r) => r.path === '/embeddings');
    const ok = embeds.filter((r) => r.status === 200).length;
    const limited = embeds.filter((r) => r.status === 429).length;
    console.log(
      `rpm ${perMinute}: ${ok} answered, ${limited} 429s, ${(ms / 1000).toFixed(1)} s, exit ${code}`,
    );
    expect(code, log.slice(-2000)).toBe(0);
    expect(emulator.stats.retryAfterViolations).toEqual({});
    // More requests than one window holds: the run had to be paced to finish.
    expect(ok).toBeGreaterThan(perMinute);
    // At about the limit's rate: the second window's requests went out as soon as it allowed.
    expect(ms).toBeLessThan((Math.ceil(ok / perMinute) - 1) * 60_000 + 25_000);
    // A steady state, not a storm (was 576 429s against 265 successes, then exit 5).
    expect(limited).toBeLessThan(ok);
  }, 180_000);

  it('a Retry-After past --max-retry-after fails the batches at once (exit 5), and says until when', async () => {
    const emulator = await emulatorWith({
      recordRequests: false,
      // Calibration probes pass; then the first batch is told to come back in an hour.
      faults: { script: [...Array(12).fill('ok'), '429'], retryAfterSeconds: 3600 },
    });
    const { code, log, ms } = await runToLog(
      argsFor(join(root, 'cap'), ['--max-retry-after', '60']),
      { EMBEDPIPE_BASE_URL: emulator.baseUrl, EMBEDPIPE_API_KEY: EMULATOR_API_KEY },
      join(root, 'cap.log'),
    );
    expect(code, log.slice(-2000)).toBe(5);
    expect(ms).toBeLessThan(30_000);
    const warned = records(log).find((r) => r.level === 40 && /longer than --max-retry-after/.test(r.msg));
    expect(warned).toMatchObject({ until: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) });
  }, 60_000);

  it('with 20% of requests answered 429 + Retry-After: 1, no request breaks a Retry-After', async () => {
    const emulator = await emulatorWith({
      recordRequests: false,
      faults: {
        seed: 5,
        probabilities: { 429: 0.2 },
        retryAfterSeconds: 1,
        latencyMs: { min: 10, max: 120 },
      },
    });
    const { code, log } = await runToLog(
      argsFor(join(root, 'faults'), ['--max-inputs', '8']),
      { EMBEDPIPE_BASE_URL: emulator.baseUrl, EMBEDPIPE_API_KEY: EMULATOR_API_KEY },
      join(root, 'faults.log'),
    );
    console.log(
      `faults: ${emulator.stats.faults['429']} 429s, ${emulator.stats.requests} requests, exit ${code}`,
    );
    expect(code, log.slice(-2000)).toBe(0);
    expect(emulator.stats.faults['429']).toBeGreaterThan(10);
    expect(
      emulator.stats.retryAfterViolations,
      JSON.stringify(emulator.stats.retryAfterViolationTimes),
    ).toEqual({});
    expect(log).not.toContain('MaxListenersExceededWarning');
  }, 180_000);
});
