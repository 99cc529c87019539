/**
 * The CLI starts fast because commands load their heavy modules (pipeline, emulator, Arrow, Parquet,
 * undici, pino…) only in their actions. These tests run tsc's output (one module per source file,
 * split the same way in the bundle users run) with a module-load hook that records every ES module
 * it loads, and fail when --version or --help pulls in anything heavy; and the bundle itself, with
 * its code caches.
 */
import { execFile } from 'node:child_process';
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator } from '../../src/emulator/server.js';
import { CLI, cleanEnv, runCli, UNBUNDLED_CLI } from '../helpers/cli.js';

const execFileAsync = promisify(execFile);
const root = pathToFileURL(resolve('.')).href;
const pkg = JSON.parse(await readFile('package.json', 'utf8')) as { version: string };

let dir: string;
let hookUrl: string;
let cjsHook: string;
let requireHook: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'embedpipe-startup-'));
  const hook = join(dir, 'record-loads.mjs');
  // Hooks run on their own thread in Node 20: append to a file rather than talk to the main thread.
  await writeFile(
    hook,
    `import { appendFileSync } from 'node:fs';
export async function load(url, context, next) {
  appendFileSync(process.env.EMBEDPIPE_TEST_LOADS, url + '\\n');
  return next(url, context);
}
`,
  );
  hookUrl = pathToFileURL(hook).href;
  // The bundle's own require() calls of Node built-ins (they go through Module._load).
  requireHook = join(dir, 'record-builtins.cjs');
  await writeFile(
    requireHook,
    `const Module = require('node:module');
const { appendFileSync } = require('node:fs');
const load = Module._load;
Module._load = function (request, ...rest) {
  if (Module.isBuiltin(request)) appendFileSync(process.env.EMBEDPIPE_TEST_LOADS, request + '\\n');
  return load.call(this, request, ...rest);
};
`,
  );
  // CommonJS modules (pino-pretty, loaded by require) never pass the hook: list them at exit.
  cjsHook = join(dir, 'record-requires.cjs');
  await writeFile(
    cjsHook,
    `process.on('exit', () => require('node:fs').appendFileSync(process.env.EMBEDPIPE_TEST_LOADS, Object.keys(require.cache).map((f) => require('node:url').pathToFileURL(f).href + '\\n').join('')));
`,
  );
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Runs the built CLI; returns its stdout and the project files it loaded, relative to the root. */
async function loadsOf(
  args: readonly string[],
  env: Record<string, string> = {},
  cli = UNBUNDLED_CLI,
): Promise<{ stdout: string; loaded: string[] }> {
  const trace = join(dir, `loads-${args.length}-${Math.random().toString(16).slice(2)}.txt`);
  await writeFile(trace, '');
  const register = `import { register } from 'node:module'; register(${JSON.stringify(hookUrl)});`;
  const { stdout } = await execFileAsync(
    process.execPath,
    ['--require', cjsHook, '--import', `data:text/javascript,${encodeURIComponent(register)}`, cli, ...args],
    { env: cleanEnv({ ...env, EMBEDPIPE_TEST_LOADS: trace }) },
  );
  const loaded = (await readFile(trace, 'utf8'))
    .split('\n')
    .filter((url) => url.startsWith(root))
    .map((url) => url.slice(root.length + 1));
  return { stdout, loaded };
}

/** Runs the bundle users run; returns its stdout and the Node built-ins it required (`node:` names). */
async function builtinsOf(
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<{ stdout: string; builtins: string[] }> {
  const trace = join(dir, `requires-${Math.random().toString(16).slice(2)}.txt`);
  await writeFile(trace, '');
  const { stdout } = await execFileAsync(process.execPath, ['--require', requireHook, CLI, ...args], {
    env: cleanEnv({ ...env, EMBEDPIPE_TEST_LOADS: trace }),
  });
  const names = (await readFile(trace, 'utf8')).split('\n').filter(Boolean);
  return {
    stdout,
    builtins: [...new Set(names.map((name) => (name.startsWith('node:') ? name : `node:${name}`)))],
  };
}

/** `run --dry-run` of a one-document corpus written as NAME.jsonl, output in NAME-out. */
async function dryRunOfOneDocument(name: string): Promise<string[]> {
  const input = join(dir, `${name}.jsonl`);
  await writeFile(input, '{"id":"a","text":"hello"}\n');
  return [
    'run',
    '--dry-run',
    '--input',
    input,
    '--model',
    'emu/embed-small',
    '--out',
    join(dir, `${name}-out`),
    '--json',
  ];
}

const emulatorEnv = (emulator: { baseUrl: string }) => ({
  EMBEDPIPE_BASE_URL: emulator.baseUrl,
  EMBEDPIPE_API_KEY: 'emu-test-key',
});

/** What a command's registration may load: the light cli/ modules, errors, the version, commander. */
function isLight(path: string): boolean {
  if (path.startsWith('node_modules/commander/') || path === 'package.json') return true;
  // The defaults and options tables are plain constants: help texts are generated from them, so a
  // default is written once.
  if (path === 'dist/errors.js' || path === 'dist/version.js') return true;
  if (path === 'dist/config/defaults.js' || path === 'dist/config/options-table.js') return true;
  return /^dist\/cli\/[\w-]+\.js$/.test(path) && !path.endsWith('-action.js');
}

describe('CLI startup', () => {
  it.each(['--version', '--help', 'run --help', 'gateway --help'])(
    '`%s` loads no heavy module',
    async (line) => {
      const { stdout, loaded } = await loadsOf(line.split(' '));
      expect(stdout).not.toBe('');
      expect(loaded, 'the load hook saw nothing: the check is broken').toContain('dist/cli/main.js');
      expect(loaded.filter((path) => !isLight(path))).toEqual([]);
    },
  );

  it('a run loads what its corpus and terminal need only: no csv-parse for JSONL, no pino-pretty off a TTY, no zod before a manifest', async () => {
    const emulator = await startEmulator();
    try {
      const { stdout, loaded } = await loadsOf(await dryRunOfOneDocument('one'), emulatorEnv(emulator));
      expect(JSON.parse(stdout)).toMatchObject({ status: 'dry-run', documents: 1 });
      expect(loaded).toContain('dist/pipeline/run.js');
      expect(
        loaded.some((path) => path.startsWith('node_modules/pino/')),
        'the CJS record is broken',
      ).toBe(true);
      const unwanted = /^node_modules\/(csv-parse|pino-pretty|zod)\/|^dist\/corpus\/csv\.js$/;
      expect(loaded.filter((path) => unwanted.test(path))).toEqual([]);
    } finally {
      await emulator.close();
    }
  });

  it('the bundle users run evaluates its commands lazily: --help loads none of the run stack', async () => {
    // One CommonJS file now (code caches need it: scripts/bundle.mjs), so the load hook sees no
    // modules of its own; what it still sees are the Node built-ins the bundled packages require
    // when their modules are evaluated: undici's net and http, Node's zlib and crypto for Parquet
    // and hashing. --help must need none of them, and a run (the check works) does.
    const heavy = /^node:(net|http|tls|zlib|crypto|worker_threads)$/;
    const help = await builtinsOf(['run', '--help']);
    expect(help.stdout).toContain('Usage: embedpipe run');
    expect(help.builtins, 'the require record is broken').toContain('node:url');
    expect(help.builtins.filter((name) => heavy.test(name))).toEqual([]);
    const emulator = await startEmulator();
    try {
      const run = await builtinsOf(await dryRunOfOneDocument('lazy'), emulatorEnv(emulator));
      expect(JSON.parse(run.stdout)).toMatchObject({ status: 'dry-run', documents: 1 });
      expect(run.builtins.filter((name) => heavy.test(name)).length).toBeGreaterThan(0);
    } finally {
      await emulator.close();
    }
  });

  it('the bundle starts from the code caches built with it: the light one for --help, the full one for a run', async () => {
    const report = { EMBEDPIPE_REPORT_CODE_CACHE: '1' };
    const help = await runCli(['--help'], report);
    expect(help.code, help.stderr).toBe(0);
    expect(help.stderr).toMatch(/code cache \S+\.light\.cache: accepted\n/);
    const run = await runCli(['run', 'no-such-job.json'], report);
    expect(run.stderr).toMatch(/code cache \S+\.full\.cache: accepted\n/);
    expect(run.stderr).toContain('embedpipe: job file not found: no-such-job.json\n');
  });

  it('a damaged, rejected or missing code cache only means compiling as usual', async () => {
    // A copy of the bundle beside a package.json (the version is read from the one above it).
    const copy = join(dir, 'copy');
    await cp('dist/bundle', join(copy, 'dist/bundle'), { recursive: true });
    await cp('package.json', join(copy, 'package.json'));
    const caches = (await readdir(join(copy, 'dist/bundle'))).filter((name) => name.endsWith('.cache'));
    expect(caches.map((name) => name.replace(/^embedpipe-[0-9a-f]{16}\./, '')).sort()).toEqual([
      'full.cache',
      'light.cache',
    ]);
    const cli = join(copy, 'dist/bundle/main.js');
    const env = cleanEnv({ EMBEDPIPE_REPORT_CODE_CACHE: '1' });
    const version = (nodeFlags: readonly string[] = []) =>
      execFileAsync(process.execPath, [...nodeFlags, cli, '--version'], { env });

    // V8 checks a cache's header: under other V8 flags it is rejected.
    const otherFlags = await version(['--stack-size=900']);
    expect(otherFlags.stdout).toBe(`${pkg.version}\n`);
    expect(otherFlags.stderr).toMatch(/\.light\.cache: rejected\n/);

    // It does not check the payload (a damaged one crashed Node): the loader's crc does.
    const light = join(copy, 'dist/bundle', caches.find((name) => name.endsWith('.light.cache'))!);
    const bytes = await readFile(light);
    await writeFile(light, Buffer.concat([bytes.subarray(0, 64), Buffer.alloc(bytes.length - 64, 0x5a)]));
    const damaged = await version();
    expect(damaged.stdout).toBe(`${pkg.version}\n`);
    expect(damaged.stderr).toMatch(/\.light\.cache: damaged\n/);

    await rm(join(copy, 'dist/bundle', caches.find((name) => name.endsWith('.full.cache'))!));
    const missing = await execFileAsync(process.execPath, [cli, 'run', 'no-such-job.json'], { env }).catch(
      (error: { code: number; stderr: string }) => error,
    );
    expect(missing).toMatchObject({ code: 2 });
    expect(missing.stderr).toMatch(/\.full\.cache: missing\n/);
    expect(missing.stderr).toContain('embedpipe: job file not found: no-such-job.json\n');
  });

  it("the bundle does not load Node's HTTP/2 module: the gateway client speaks HTTP/1.1", async () => {
    // undici's h2 client is swapped for a stub at bundle time (scripts/bundle.mjs); loading
    // node:http2 for it cost every start-up ~12 ms of CPU.
    const files = (await readdir('dist/bundle')).filter((name) => /\.c?js$/.test(name));
    const texts = await Promise.all(files.map((name) => readFile(join('dist/bundle', name), 'utf8')));
    expect(files.filter((_, i) => /require\(["']node:http2["']\)/.test(texts[i]!))).toEqual([]);
    expect(texts.some((text) => text.includes('HTTP/2 is not built into embedpipe'))).toBe(true);
  });

  it('--version prints the package version', async () => {
    const r = await runCli(['--version']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(`${pkg.version}\n`);
  });

  it.each([
    ['run', '[options] [job]', '--max-tokens-per-request <n>'],
    ['models', '[options]', '--base-url <url>'],
    ['members', '[options]', '--limit <n>'],
    ['transcribe', '[options] <file>', '--temperature <t>'],
    ['embed', '[options] <text>', '--model <model>'],
    ['gateway', '[options]', '--latency <ms>'],
  ])('%s --help still shows its usage and options', async (command, usage, option) => {
    const r = await runCli([command, '--help']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`Usage: embedpipe ${command} ${usage}\n`);
    expect(r.stdout).toContain(option);
  });

  it('errors raised inside a lazily loaded action still map to exit codes', async () => {
    const members = await runCli(['members', '--all', '--offset', '1']);
    expect(members.code).toBe(2);
    expect(members.stderr).toBe('embedpipe: --all and --offset do not go together\n');
    const run = await runCli(['run', 'no-such-job.json']);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe('embedpipe: job file not found: no-such-job.json\n');
  });
});
