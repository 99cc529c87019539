/** lockDataset: one holder at a time, the holder named, takeover of dead and stale holders. */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { once } from 'node:events';
import { access, mkdir, mkdtemp, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OutputError, OutputLockedError } from '../../src/errors.js';
import { lockDataset } from '../../src/output/lock.js';

const BUILT_LOCK = resolve(import.meta.dirname, '../../dist/output/lock.js');

let base: string;
let n = 0;
/** A fresh, existing dataset root (the versions folder) for each test. */
async function freshRoot(): Promise<string> {
  const root = join(base, `d${n++}.versions`);
  await mkdir(root);
  return root;
}

beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'embedpipe-lock-'));
});
afterAll(async () => {
  await rm(base, { recursive: true, force: true });
});

async function lockError(promise: Promise<unknown>): Promise<Error> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof Error)) throw new Error('expected the lock to be refused');
  return error;
}

/** The pid of a process that has exited (its pid is free, and almost surely not reused yet). */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '']);
  await once(child, 'exit');
  if (child.pid === undefined) throw new Error('no pid');
  return child.pid;
}

async function writeHolder(root: string, holder: { pid: number; host: string }): Promise<void> {
  await mkdir(join(root, '.lock'));
  await writeFile(
    join(root, '.lock-holder.json'),
    `${JSON.stringify({ ...holder, startedAt: '2020-01-01T00:00:00.000Z' })}\n`,
  );
}

const readHolder = async (root: string) =>
  JSON.parse(await readFile(join(root, '.lock-holder.json'), 'utf8')) as { pid: number; host: string };

describe('lockDataset in one process', () => {
  it('refuses a second lock while held (exit 8, naming pid and host), and locks again after release', async () => {
    const root = await freshRoot();
    const held = await lockDataset(root);
    expect(await readHolder(root)).toMatchObject({ pid: process.pid, host: hostname() });

    const error = await lockError(lockDataset(root));
    expect(error).toBeInstanceOf(OutputLockedError);
    expect((error as OutputLockedError).exitCode).toBe(8);
    expect(error.message).toContain(`process ${process.pid} on ${hostname()}`);
    expect(error.message).toContain(root);

    await held.release();
    await expect(access(join(root, '.lock'))).rejects.toThrow();
    await expect(access(join(root, '.lock-holder.json'))).rejects.toThrow();
    const again = await lockDataset(root);
    await again.release();
    await again.release(); // releasing twice is harmless
  });

  it('takes over at once from a holder on this host whose process is gone', async () => {
    const root = await freshRoot();
    const pid = await deadPid();
    await writeHolder(root, { pid, host: hostname() });
    const started = Date.now();
    const held = await lockDataset(root); // default staleMs (60 s): no waiting for staleness
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(await readHolder(root)).toMatchObject({ pid: process.pid, host: hostname() });
    await held.release();
  });

  it('does not take over from a holder on another host until its lock is stale', async () => {
    const root = await freshRoot();
    const pid = await deadPid(); // dead here, but on another host it cannot be checked
    await writeHolder(root, { pid, host: 'some-other-host.example' });
    const error = await lockError(lockDataset(root, { staleMs: 2_000 }));
    expect(error).toBeInstanceOf(OutputLockedError);
    expect(error.message).toContain(`process ${pid} on some-other-host.example`);

    // Not refreshed for longer than staleMs: taken over.
    const old = new Date(Date.now() - 60_000);
    await utimes(join(root, '.lock'), old, old);
    const held = await lockDataset(root, { staleMs: 2_000 });
    expect(await readHolder(root)).toMatchObject({ pid: process.pid, host: hostname() });
    await held.release();
  });

  it('takes over a lock whose taker was killed before it named itself (no holder file)', async () => {
    const root = await freshRoot();
    // A taker names itself inside the gate: a lock without a holder file, seen from inside the
    // gate, lost its taker in between (SIGKILL).
    await mkdir(join(root, '.lock'));
    const held = await lockDataset(root);
    expect(await readHolder(root)).toMatchObject({ pid: process.pid, host: hostname() });
    await held.release();
  });

  it('takes over a gate left by a process killed inside it, once it is 2 s stale', async () => {
    const root = await freshRoot();
    await mkdir(join(root, '.lock-gate'));
    const started = Date.now();
    const held = await lockDataset(root);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_500);
    expect(await readHolder(root)).toMatchObject({ pid: process.pid });
    await held.release();
    // Released through the gate, and the gate left behind it: the next run takes both at once.
    const again = await lockDataset(root);
    await again.release();
  });

  it('tells onLost when the lock is taken from under it', async () => {
    const root = await freshRoot();
    const lost: Error[] = [];
    const held = await lockDataset(root, { staleMs: 2_000, onLost: (error) => lost.push(error) });
    // Someone else's lock in its place (a takeover after a long stall).
    await rm(join(root, '.lock'), { recursive: true });
    await mkdir(join(root, '.lock'));
    const later = new Date(Date.now() + 10_000);
    await utimes(join(root, '.lock'), later, later);
    const deadline = Date.now() + 10_000;
    while (lost.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(lost.length).toBe(1);
    await held.release();
  });

  it('reports a root it cannot lock as an OutputError, not as locked', async () => {
    const error = await lockError(lockDataset(join(base, 'missing', 'x.versions')));
    expect(error).toBeInstanceOf(OutputError);
    expect(error).not.toBeInstanceOf(OutputLockedError);
  });
});

/**
 * A child that imports the built lock module, says `ready`, waits for `go`, tries the lock, prints
 * the outcome as JSON, then holds it until its stdin ends.
 */
const CHILD = `
import { createInterface } from 'node:readline';
const { lockDataset } = await import(process.env.LOCK_MODULE);
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
console.log('ready');
await lines.next();
let held;
try {
  held = await lockDataset(process.env.LOCK_ROOT, { staleMs: 10000 });
  console.log(JSON.stringify({ pid: process.pid, got: true }));
} catch (error) {
  console.log(JSON.stringify({ pid: process.pid, got: false, name: error.constructor.name, exitCode: error.exitCode, message: error.message }));
}
while (!(await lines.next()).done) {}
await held?.release();
process.exit(0);
`;

interface Outcome {
  pid: number;
  got: boolean;
  name?: string;
  exitCode?: number;
  message?: string;
}

async function contend(root: string, count: number): Promise<Outcome[]> {
  const children: ChildProcessWithoutNullStreams[] = [];
  const readers: AsyncIterator<string>[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const child = spawn(process.execPath, ['--input-type=module', '-e', CHILD], {
        env: { ...process.env, LOCK_MODULE: pathToFileURL(BUILT_LOCK).href, LOCK_ROOT: root },
      });
      child.stderr.on('data', (chunk) => process.stderr.write(chunk));
      children.push(child);
      readers.push(createInterface({ input: child.stdout })[Symbol.asyncIterator]());
    }
    const next = async (reader: AsyncIterator<string>) => {
      const line = await reader.next();
      if (line.done) throw new Error('a child exited early');
      return line.value;
    };
    expect(await Promise.all(readers.map(next))).toEqual(Array(count).fill('ready'));
    for (const child of children) child.stdin.write('go\n');
    const outcomes = (await Promise.all(readers.map(next))).map((line) => JSON.parse(line) as Outcome);
    // Every child answered while the winner still holds the lock; now let them go.
    const exits = children.map((child) => once(child, 'exit'));
    for (const child of children) child.stdin.end();
    for (const [code] of await Promise.all(exits)) expect(code).toBe(0);
    return outcomes;
  } finally {
    for (const child of children) if (child.exitCode === null) child.kill();
  }
}

describe('lockDataset across processes', () => {
  beforeAll(async () => {
    const built = await stat(BUILT_LOCK).catch(() => undefined);
    if (!built) throw new Error(`${BUILT_LOCK} is missing: run \`npm run build\` first`);
  });

  it('gives the lock to exactly one of 5 processes trying at once', async () => {
    const root = await freshRoot();
    const outcomes = await contend(root, 5);
    const winners = outcomes.filter((o) => o.got);
    expect(winners.length, JSON.stringify(outcomes)).toBe(1);
    for (const loser of outcomes.filter((o) => !o.got)) {
      expect(loser.name).toBe('OutputLockedError');
      expect(loser.exitCode).toBe(8);
    }
    // Released when the winner let go.
    await expect(access(join(root, '.lock'))).rejects.toThrow();
  });

  it('gives the lock to exactly one of 5 processes taking over from a dead holder at once', async () => {
    const root = await freshRoot();
    await writeHolder(root, { pid: await deadPid(), host: hostname() });
    const outcomes = await contend(root, 5);
    const winners = outcomes.filter((o) => o.got);
    expect(winners.length, JSON.stringify(outcomes)).toBe(1);
  });
});
