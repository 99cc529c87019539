/**
 * The CLI starts fast because commands load their heavy modules (pipeline, emulator, Arrow, Parquet,
 * undici, pino…) only in their actions. These tests run tsc's output (one module per source file,
 * split the same way in the bundle users run) with a module-load hook that records every ES module
 * it loads, and fail when --version or --help pulls in anything heavy; and the bundle itself.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
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
      const input = join(dir, 'one.jsonl');
      await writeFile(input, '{"id":"a","text":"hello"}\n');
      const { stdout, loaded } = await loadsOf(
        [
          'run',
          '--dry-run',
          '--input',
          input,
          '--model',
          'emu/embed-small',
          '--out',
          join(dir, 'out'),
          '--json',
        ],
        { EMBEDPIPE_BASE_URL: emulator.baseUrl, EMBEDPIPE_API_KEY: 'emu-test-key' },
      );
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

  it('the bundle users run splits the same way: --help loads a small part of it', async () => {
    const { stdout, loaded } = await loadsOf(['run', '--help'], {}, CLI);
    expect(stdout).toContain('Usage: embedpipe run');
    expect(loaded.every((path) => path.startsWith('dist/bundle/') || path === 'package.json')).toBe(true);
    const sizeOf = async (paths: readonly string[]) =>
      (await Promise.all(paths.map((path) => stat(path)))).reduce((sum, s) => sum + s.size, 0);
    const everything = (await readdir('dist/bundle')).map((name) => join('dist/bundle', name));
    expect(await sizeOf(loaded.filter((path) => path.endsWith('.js')))).toBeLessThan(
      (await sizeOf(everything)) / 10,
    );
  });

  it("the bundle does not load Node's HTTP/2 module: the gateway client speaks HTTP/1.1", async () => {
    // undici's h2 client is swapped for a stub at bundle time (scripts/bundle.mjs); loading
    // node:http2 for it cost every start-up ~12 ms of CPU.
    const files = (await readdir('dist/bundle')).filter((name) => name.endsWith('.js'));
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
