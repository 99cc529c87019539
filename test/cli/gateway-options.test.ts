/**
 * Options a command cannot honour are refused, and a gateway is never guessed. The commands are
 * registered on a commander program as main.ts does (its own program runs at import), parsed and run
 * in this process: `enqueue --max-cost` / `--emulator` exit 2 saying why, and `models`, `worker` and
 * `enqueue` without a base URL exit 2 naming EMBEDPIPE_BASE_URL and --base-url, before any network.
 */
import { writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { Command } from 'commander';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { registerEnqueue } from '../../src/cli/enqueue.js';
import { registerModels } from '../../src/cli/models.js';
import { registerWorker } from '../../src/cli/worker.js';
import { EMULATOR_API_KEY, type RunningEmulator, startEmulator } from '../../src/emulator/index.js';
import { ExitCode, MissingKeyError, UsageError } from '../../src/errors.js';
import { tempFolder } from '../helpers/temp.js';

const dir = await tempFolder('embedpipe-gateway-options-');
const corpus = join(dir, 'docs.csv');
await writeFile(corpus, 'id,text\n1,hello\n');

let emulator: RunningEmulator;
/** A local port nothing listens on: a command that connected there would fail otherwise (exit 6 or 10). */
let closedPort: number;

beforeAll(async () => {
  emulator = await startEmulator({ recordRequests: false });
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closedPort = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
});
afterAll(async () => {
  await emulator.close();
});

beforeEach(() => {
  // Nothing from the developer's shell: each test sets what it needs.
  for (const name of ['EMBEDPIPE_BASE_URL', 'EMBEDPIPE_API_KEY', 'REDIS_URL', 'EMBEDPIPE_LOG_LEVEL']) {
    vi.stubEnv(name, '');
  }
});
afterEach(() => {
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
});

/** `embedpipe ARGS`, in this process; resolves, or rejects with the command's error. */
async function embedpipe(...args: string[]): Promise<void> {
  const program = new Command('embedpipe').exitOverride();
  registerModels(program);
  registerWorker(program);
  registerEnqueue(program);
  for (const command of program.commands) command.exitOverride().configureOutput({ outputError: () => {} });
  await program.parseAsync(args, { from: 'user' });
}

async function usageError(run: Promise<void>): Promise<string> {
  const error = await run.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(UsageError);
  expect((error as UsageError).exitCode).toBe(ExitCode.usage);
  return (error as Error).message;
}

const redis = () => `redis://127.0.0.1:${closedPort}`;
const enqueueArgs = () => ['enqueue', '--input', corpus, '--model', 'emu/embed-small', '--redis', redis()];

describe('enqueue refuses the run options a distributed run cannot honour', () => {
  it('--max-cost: not enforced across workers; points to embedpipe run', async () => {
    vi.stubEnv('EMBEDPIPE_BASE_URL', emulator.baseUrl);
    vi.stubEnv('EMBEDPIPE_API_KEY', EMULATOR_API_KEY);
    const message = await usageError(embedpipe(...enqueueArgs(), '--max-cost', '5'));
    expect(message).toMatch(/^--max-cost: /);
    expect(message).toContain('each with its own key and gateway');
    expect(message).toContain('not be enforced across workers');
    expect(message).toContain('embedpipe run --max-cost USD');
    // Zero is a cap too, and refused the same way.
    expect(await usageError(embedpipe(...enqueueArgs(), '--max-cost', '0'))).toMatch(/^--max-cost: /);
  });

  it('--emulator: workers could not reach it, even with a --base-url', async () => {
    vi.stubEnv('EMBEDPIPE_API_KEY', EMULATOR_API_KEY);
    for (const more of [[], ['--base-url', emulator.baseUrl]]) {
      const message = await usageError(embedpipe(...enqueueArgs(), '--emulator', ...more));
      expect(message).toMatch(/^--emulator: /);
      expect(message).toContain('each worker calls its own gateway with its own key');
      expect(message).toContain('embedpipe gateway');
    }
  });

  it("a job file's maxCostUsd is not refused (a job shared with run) but never ignored silently", async () => {
    const job = join(dir, 'capped.json');
    await writeFile(
      job,
      JSON.stringify({ input: { path: 'docs.csv' }, model: 'emu/embed-small', maxCostUsd: 5 }),
    );
    const stderr: string[] = [];
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      stderr.push(String(chunk));
      return true;
    });
    // No key: it stops there, after the warning and before Redis or the gateway.
    const error = await embedpipe('enqueue', job, '--redis', redis(), '--base-url', emulator.baseUrl).catch(
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(MissingKeyError);
    expect(stderr.join('')).toMatch(/maxCostUsd is not enforced by a distributed run/);
  });
});

describe('no gateway base URL configured', () => {
  const message = 'no gateway: set EMBEDPIPE_BASE_URL (ends in /v1) or pass --base-url URL';

  it('models, worker and enqueue exit 2 saying what to set, before any request', async () => {
    vi.stubEnv('EMBEDPIPE_API_KEY', EMULATOR_API_KEY);
    expect(await usageError(embedpipe('models'))).toBe(message);
    expect(await usageError(embedpipe('worker', '--redis', redis()))).toBe(message);
    expect(await usageError(embedpipe(...enqueueArgs()))).toBe(message);
  });

  it('is found in --base-url, then EMBEDPIPE_BASE_URL', async () => {
    vi.stubEnv('EMBEDPIPE_API_KEY', EMULATOR_API_KEY);
    const stdout: string[] = [];
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      stdout.push(String(chunk));
      return true;
    });
    await embedpipe('models', '--json', '--base-url', emulator.baseUrl);
    vi.stubEnv('EMBEDPIPE_BASE_URL', emulator.baseUrl);
    await embedpipe('models', '--json');
    // The flag wins over the environment (which points nowhere here).
    vi.stubEnv('EMBEDPIPE_BASE_URL', `http://127.0.0.1:${closedPort}/v1`);
    await embedpipe('models', '--json', '--base-url', emulator.baseUrl);
    const listings = stdout
      .join('')
      .trim()
      .split(/\n(?=\[)/);
    expect(listings).toHaveLength(3);
    for (const listing of listings)
      expect(JSON.parse(listing)).toContainEqual(expect.objectContaining({ id: 'emu/embed-small' }));
  });
});
