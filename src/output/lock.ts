/**
 * One run at a time per dataset: two overlapping cron runs on the same `--out` would build the same
 * version side by side. The lock is proper-lockfile's: a folder created with mkdir (atomic, also on
 * NFS) whose mtime the holder refreshes; a lock not refreshed for `staleMs` is stale and taken over,
 * so a run killed with SIGKILL, or on a machine that died, cannot leave the dataset locked. A holder
 * file beside it names the holder for the message, and lets a run on the same host take over at
 * once from a holder whose process is gone (no need to wait for staleness).
 */
import { readFile, rm, rmdir, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import lockfile from 'proper-lockfile';
import { OutputError, OutputLockedError } from '../errors.js';
import { messageOf } from './fs-errors.js';

const LOCK = '.lock';
const HOLDER = '.lock-holder.json';
/**
 * A short-lived second lock every taker passes through, so the lock and its holder file change
 * together: without it, runs taking over from a dead holder at once each remove the lock another
 * of them has just taken, and several hold it.
 */
const GATE = '.lock-gate';
const GATE_STALE_MS = 2_000;

export interface LockOptions {
  /** A lock not refreshed for this long is stale (its holder is gone). */
  readonly staleMs?: number;
  /** Told when the lock was lost while held (taken over after a long stall): the run must stop. */
  readonly onLost?: (error: Error) => void;
}

interface Holder {
  readonly pid: number;
  readonly host: string;
  readonly startedAt: string;
}

export interface HeldLock {
  release(): Promise<void>;
}

/** Takes the lock of the dataset folder `root` (its versions folder), or throws OutputLockedError. */
export async function lockDataset(root: string, opts: LockOptions = {}): Promise<HeldLock> {
  const lockPath = join(root, LOCK);
  const holderPath = join(root, HOLDER);
  const staleMs = opts.staleMs ?? 60_000;
  const take = () =>
    lockfile.lock(root, {
      lockfilePath: lockPath,
      realpath: false,
      stale: staleMs,
      update: Math.max(1_000, Math.floor(staleMs / 4)),
      retries: 0,
      onCompromised: (error) => opts.onLost?.(error),
    });
  let leaveGate: () => Promise<void>;
  try {
    leaveGate = await enterGate(root);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ELOCKED') {
      throw new OutputError(`cannot lock ${root}: ${messageOf(error)}`, { cause: error });
    }
    const holder = await readHolder(holderPath);
    throw lockedError(root, holder && isAlive(holder) ? holder : undefined, staleMs);
  }
  let release: () => Promise<void>;
  try {
    try {
      release = await take();
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ELOCKED') {
        throw new OutputError(`cannot lock ${root}: ${messageOf(error)}`, { cause: error });
      }
      const holder = await readHolder(holderPath);
      // Inside the gate, a lock without a holder file lost its taker between the two (a taker names
      // itself, and a holder leaves, only inside the gate); one whose process is gone (killed on
      // this host) is stale too.
      if (holder && isAlive(holder)) throw lockedError(root, holder, staleMs);
      await rmdir(lockPath).catch(() => {});
      try {
        release = await take();
      } catch (again) {
        if ((again as NodeJS.ErrnoException).code === 'ELOCKED') throw lockedError(root, undefined, staleMs);
        throw new OutputError(`cannot lock ${root}: ${messageOf(again)}`, { cause: again });
      }
    }
    const holder: Holder = { pid: process.pid, host: hostname(), startedAt: new Date().toISOString() };
    await writeFile(holderPath, `${JSON.stringify(holder)}\n`);
  } finally {
    await leaveGate().catch(() => {});
  }
  return {
    async release() {
      // Through the gate, so no taker finds the lock without its holder file while it is held.
      const leave = await enterGate(root).catch(() => undefined);
      try {
        await rm(holderPath, { force: true });
        await release().catch(() => {}); // already released or taken over: nothing left to release
      } finally {
        await leave?.().catch(() => {});
      }
    },
  };
}

/**
 * Passes the gate (see GATE). It is held for milliseconds, so a gate not refreshed for 2 s (the
 * shortest staleness proper-lockfile allows) was left by a process killed inside it: the waits
 * outlast that, and it is taken over.
 */
function enterGate(root: string): Promise<() => Promise<void>> {
  return lockfile.lock(join(root, GATE), {
    lockfilePath: join(root, GATE),
    realpath: false,
    stale: GATE_STALE_MS,
    retries: { retries: 40, minTimeout: 10, maxTimeout: 100 },
    onCompromised: () => {}, // held for milliseconds; losing it loses nothing
  });
}

async function readHolder(path: string): Promise<Holder | undefined> {
  try {
    return JSON.parse(await readFile(path, 'utf8')) as Holder;
  } catch {
    return undefined; // not written yet, or removed: say less
  }
}

/** Whether the holder may still run: another host cannot be asked, so it counts as alive. */
function isAlive(holder: Holder): boolean {
  if (holder.host !== hostname()) return true;
  try {
    process.kill(holder.pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function lockedError(root: string, holder: Holder | undefined, staleMs: number): OutputLockedError {
  const who = holder
    ? `process ${holder.pid} on ${holder.host}, started ${holder.startedAt}`
    : 'another process';
  return new OutputLockedError(
    `another embedpipe run (${who}) is writing this dataset (${root}); this run did nothing. ` +
      `If that run was killed, its lock goes stale ${Math.round(staleMs / 1000)} s after its last refresh`,
  );
}
