// Shared bench helpers: the emulator and the CLI as child processes (so the process measured is
// embedpipe alone), corpus generation, RSS sampling from /proc.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';

// BENCH_CLI: another build's main.js (e.g. a copy of the last build's dist/bundle) to measure instead.
export const CLI = process.env.BENCH_CLI ?? new URL('../dist/bundle/main.js', import.meta.url).pathname;
export const API_KEY = 'emu-test-key';

/**
 * Starts `embedpipe gateway` in a child process (under `prefix`, e.g. `['taskset', '-c', '1']`);
 * resolves with its base URL and a stop function.
 */
export async function startGateway(args = [], prefix = []) {
  const argv = [...prefix, process.execPath, CLI, 'gateway', '--port', '0', ...args];
  const child = spawn(argv[0], argv.slice(1), {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const [chunk] = await once(child.stdout, 'data');
  const baseUrl = chunk.toString().trim();
  return {
    baseUrl,
    async stop() {
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}

/**
 * Runs `embedpipe run … --json` in a child; samples its RSS (and VmHWM) every `sampleMs`. `prefix` runs it
 * under another command (e.g. `['taskset', '-c', '0']`). `cpuMs`: its whole-process CPU, exact;
 * `peakRss`: its high-water mark.
 */
export async function runEmbedpipe(args, env, options = {}) {
  const { stdout, samples, cpuMs, mainThreadCpuMs, peakRss } = await runMeasured(
    [CLI, 'run', ...args, '--json'],
    env,
    options,
  );
  return { summary: JSON.parse(stdout), samples, cpuMs, mainThreadCpuMs, peakRss };
}

/**
 * Runs `node ARGS` in a child to its end (under `prefix`), sampling its RSS every `sampleMs`;
 * resolves with its stdout, the samples, and its CPU (user + system, every thread, from start to
 * exit: read from this process's reaped-children times, so nothing between two samples is lost),
 * and its main thread's share of it. Nothing else may exit meanwhile.
 */
export async function runMeasured(args, env, { sampleMs = 250, prefix = [] } = {}) {
  // BENCH_NODE_ARGS: node flags for the measured process, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`.
  const flags = process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  // BENCH_ENV: variables for the measured process alone, e.g. `MALLOC_MMAP_THRESHOLD_=131072`.
  const extra = (process.env.BENCH_ENV ?? '')
    .split(' ')
    .filter(Boolean)
    .map((assignment) => [
      assignment.slice(0, assignment.indexOf('=')),
      assignment.slice(assignment.indexOf('=') + 1),
    ]);
  const argv = [...prefix, process.execPath, ...flags, ...args];
  const before = await reapedChildrenCpuMs();
  const child = spawn(argv[0], argv.slice(1), {
    env: { PATH: process.env.PATH, ...Object.fromEntries(extra), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const samples = [];
  const started = Date.now();
  const sample = async () => {
    const memory = await memoryOf(child.pid);
    if (memory) samples.push({ t: Date.now() - started, ...memory });
  };
  const timer = setInterval(sample, sampleMs);
  // The main thread's time on a core (the scheduler's nanoseconds), read every 10 ms: the last read
  // before exit is what it used, within 10 ms. The rest of cpuMs is V8's helper threads and libuv's.
  let mainThreadNs = 0;
  const mainTimer = setInterval(() => {
    try {
      mainThreadNs = Number(
        readFileSync(`/proc/${child.pid}/task/${child.pid}/schedstat`, 'utf8').split(' ')[0],
      );
    } catch {
      // Exited between the timer and the read, or no schedstat on this kernel.
    }
  }, 10);
  const [code] = await once(child, 'exit');
  clearInterval(timer);
  clearInterval(mainTimer);
  if (code !== 0) throw new Error(`${args.slice(0, 2).join(' ')} exited ${code}: ${stderr.slice(-2000)}`);
  return {
    stdout,
    stderr,
    samples,
    // VmHWM only grows: the last sample's is the peak up to it.
    peakRss: Math.max(0, ...samples.map((s) => s.hwm)),
    cpuMs: (await reapedChildrenCpuMs()) - before,
    mainThreadCpuMs: mainThreadNs / 1e6,
    wallMs: Date.now() - started,
  };
}

/** CPU milliseconds of this process's children that have exited (cutime + cstime; USER_HZ is 100 on Linux). */
async function reapedChildrenCpuMs() {
  const stat = await readFile('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[13]) + Number(fields[14])) * 10;
}

/**
 * A process's RSS now and its high-water mark so far (`VmHWM`: the kernel's peak, which a rise
 * between two samples cannot hide), in bytes; `pid` 'self' for this process. Not
 * resourceUsage().maxRSS, which a child inherits from its parent at fork (Linux keeps the pre-exec peak).
 */
export async function memoryOf(pid) {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const rss = /VmRSS:\s+(\d+) kB/.exec(status);
    const hwm = /VmHWM:\s+(\d+) kB/.exec(status);
    return rss && hwm ? { rss: Number(rss[1]) * 1024, hwm: Number(hwm[1]) * 1024 } : undefined;
  } catch {
    return undefined;
  }
}

/** The middle value (the mean of the two middle ones for an even count). */
export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** Deterministic pseudo-random numbers. */
export function random(seed) {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

const WORDS =
  'the of and to in is was that for it with as on be at by had are but from or have an they which one you were all there would their we been has when who will more no if out so said what up its about into than them can only other new some could time these two may then do first any like over even most made after also did many before must through back years where much way well down should because each just those people how too little state good very make world still own see work long get here between both life being under never day same another know while last might great old year off come since against go came right used take three pipeline embedding gateway manifest tokenizer paragraph sentence'.split(
    ' ',
  );

export function sentence(rand, words = 6 + Math.floor(rand() * 18)) {
  const out = [];
  for (let i = 0; i < words; i++) out.push(WORDS[Math.floor(rand() * WORDS.length)]);
  return `${out.join(' ')}.`;
}

/**
 * Writes a JSONL corpus of about `bytes` bytes (or exactly `maxDocuments` documents), documents of
 * about `docBytes` bytes of prose each.
 */
export async function writeJsonlCorpus(path, bytes, docBytes, { seed = 1, maxDocuments = Infinity } = {}) {
  const rand = random(seed);
  const out = createWriteStream(path);
  let written = 0;
  let n = 0;
  while (written < bytes && n < maxDocuments) {
    const paragraphs = [];
    let size = 0;
    while (size < docBytes) {
      const para = Array.from({ length: 3 + Math.floor(rand() * 5) }, () => sentence(rand)).join(' ');
      paragraphs.push(para);
      size += para.length + 2;
    }
    const line = `${JSON.stringify({ id: `doc-${n++}`, text: paragraphs.join('\n\n') })}\n`;
    written += Buffer.byteLength(line);
    if (!out.write(line)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
  return { documents: n, bytes: written };
}

export const mb = (bytes) => (bytes / 1e6).toFixed(1);

/** A free TCP port on 127.0.0.1 (for a private redis-server). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/**
 * A private redis-server on a free port, its files in `dir`; resolves once it answers PING, with
 * its port, URL and a stop function.
 */
export async function startRedis(dir) {
  const port = await freePort();
  const server = spawn(
    'redis-server',
    ['--port', String(port), '--save', '', '--appendonly', 'no', '--dir', dir],
    {
      stdio: 'ignore',
    },
  );
  const { Redis } = await import('ioredis');
  const probe = new Redis({ port, maxRetriesPerRequest: null, retryStrategy: () => 100 });
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('redis-server did not start')), 10_000);
    probe.once('ready', () => {
      clearTimeout(timer);
      resolve();
    });
  });
  probe.disconnect();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    async stop() {
      server.kill('SIGTERM');
      await once(server, 'exit');
    },
  };
}

/** `count` `embedpipe worker` processes on `queue`, stderr shown; `stop()` sends SIGTERM and waits. */
export function startWorkers(count, { redisUrl, queue, env, args = [] }) {
  const children = Array.from({ length: count }, () =>
    spawn(process.execPath, [CLI, 'worker', '--redis', redisUrl, '--queue', queue, ...args], {
      env,
      stdio: ['ignore', 'ignore', 'inherit'],
    }),
  );
  return {
    async stop() {
      for (const child of children) child.kill('SIGTERM');
      await Promise.all(children.map((child) => once(child, 'exit')));
    },
  };
}

/** Runs `embedpipe ARGS` to its end; throws with the tail of its log when it fails. */
export async function cliRun(args, env) {
  const child = spawn(process.execPath, [CLI, ...args], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const [code] = await once(child, 'exit');
  if (code !== 0) throw new Error(`embedpipe ${args[0]} exited ${code}: ${stderr.slice(-2000)}`);
  return stderr;
}
