/**
 * Every shell command README.md and docs/*.md show (their ```sh blocks, and the inline spans of
 * their prose that start with `embedpipe`, `npm`, `duckdb -c`, `python3 -c`, …) is checked here.
 * Each meets the first of RULES that matches it, and is then either
 *  - run here, against small datasets this file makes in beforeAll with the built CLI, the gateway
 *    emulator, a private redis-server, PGlite and a LanceDB folder (the docs' paths, models, stores,
 *    ports and placeholders stand for the temp ones, and a synopsis runs with its optional parts:
 *    see `substitute`), or
 *  - found among what CI runs (.ci/run, and the npm scripts it calls), or
 *  - not run, with the reason it cannot run here, and a lighter check instead.
 * Whatever its rule, an `embedpipe` command's subcommand must exist and each of its --flags must be
 * in that subcommand's --help. A command no rule matches fails with its page and line: a new
 * command in the docs needs a rule.
 *
 * The commands run in the order the pages show them (README.md first, then docs/ by name), as a
 * reader would type them: `status RUN` follows the `enqueue` that printed RUN, `search` a store
 * follows the `sync` that filled it. Commands of unrelated state run side by side (see `laneOf`).
 */
import { execFile, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, readdir, readlink, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  EMULATOR_API_KEY,
  EMULATOR_MANAGEMENT_KEY,
  type RunningEmulator,
  startEmulator,
} from '../../src/emulator/index.js';
import { wav } from '../helpers/audio.js';
import { runCli, spawnCli } from '../helpers/cli.js';
import { query } from '../helpers/duckdb.js';
import { type PgliteServer, startPglite } from '../helpers/pglite-server.js';
import { type RedisServer, startRedisServer } from '../helpers/redis-server.js';
import { skipUnlessCi } from '../helpers/skip.js';
import { tempFolder } from '../helpers/temp.js';
import {
  commandsIn,
  type DocCommand,
  flagsOf,
  OTHER_FENCES,
  SHELL_FENCES,
  shellCommands,
  splitFences,
  subcommandOf,
  synopsisAsCommand,
} from './doc-commands.js';

const PAGES = [
  'README.md',
  ...readdirSync('docs')
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`),
];
const COMMANDS = PAGES.flatMap((page) => commandsIn(page, readFileSync(page, 'utf8')));

interface Rule {
  /** Matched against the command's words joined by spaces (`npx embedpipe` spelled `embedpipe`). */
  match: RegExp;
  /** 'run': run here; 'ci': .ci/run runs it; otherwise why it is not run, and what is checked instead. */
  how: 'run' | 'ci' | { notRun: string; check?: (words: string[]) => void };
}

const RULES: Rule[] = [
  // Not run: what names a command without the arguments it needs, and synopses of alternatives.
  {
    match: /^embedpipe (sync|search|eval|verify)$/,
    how: {
      notRun:
        "the command's name in the prose, without the dataset folder (and query) it needs; the " +
        "page's examples of it run",
    },
  },
  {
    match: /^embedpipe run --max-cost$/,
    how: {
      notRun:
        'an option named in the prose, without its value; test/e2e/incremental.test.ts runs ' +
        '`run --max-cost` to its exit 9 and the re-run that finishes',
    },
  },
  {
    match: /^embedpipe datasets DIR \[--switch vN\] \[--remove vN\]/,
    how: {
      notRun:
        'a synopsis of alternatives: --switch and --remove of one version do not go together; ' +
        'docs/versions.md and README.md run each',
    },
  },
  {
    match: /^embedpipe sync DIR --to URL /,
    how: {
      notRun:
        'a synopsis of alternatives: --verify writes nothing, --repair and --replace write, ' +
        '--halfvec is PostgreSQL only; docs/stores.md runs sync, --index hnsw and --verify here, ' +
        'test/e2e/sync.test.ts --repair, --replace and --halfvec',
    },
  },

  // Run here: `run`, `search`, `eval` and `verify --sample` with --emulator in place of the docs'
  // gateway, the other commands with EMBEDPIPE_BASE_URL and the keys of this file's emulator (and
  // REDIS_URL); `out/docs` and `DIR` are a dataset beforeAll made, `vN` an old version of it.
  { match: /^embedpipe run (--input|jobs\/nightly\.example\.json|\[JOB\])/, how: 'run' },
  { match: /^embedpipe (datasets|verify|eval) (out\/docs|DIR)( |$)/, how: 'run' },
  // A store named in the docs is PGlite (PostgreSQL + pgvector) or a LanceDB folder here.
  { match: /^embedpipe sync out\/docs --to (postgres:\/\/app@db\.internal|lancedb:\/\/\/srv\/)/, how: 'run' },
  { match: /^embedpipe search (out\/docs|TARGET|lancedb:\/\/\/srv\/lance\?table=docs) /, how: 'run' },
  { match: /^embedpipe (models|embed|transcribe|members)( |$)/, how: 'run' },
  // Serves until SIGTERM: started on a free port, asked for its models, stopped.
  { match: /^embedpipe gateway( |$)/, how: 'run' },
  // Against a private redis-server: `worker` until the runs enqueued so far are switched, then SIGTERM.
  { match: /^embedpipe (enqueue|worker|status|finalize|resume|retry-failed)( |$)/, how: 'run' },
  { match: /^duckdb -c /, how: 'run' },
  // Skipped, naming the module, where python3 or the module is missing (pyarrow, pandas and
  // Polars cannot be installed on this project's machines: not in Debian, no PyPI).
  { match: /^python3 -c /, how: 'run' },

  // Run by CI: .ci/run runs `npm ci`, `npm test` (which builds first), `npm run demo` and
  // `docker-compose config`.
  { match: /^(npm (ci|test|run demo|run build)|docker-compose config)$/, how: 'ci' },

  // Not run here.
  {
    match: /^npm run bench$/,
    how: {
      notRun: 'benchmarks: minutes of load on every core, numbers rather than pass/fail',
      check: ([, , script]) => expect(scripts()).toHaveProperty(script!),
    },
  },
  {
    match: /^BENCH_PIN=1 taskset -c 0 node bench\/[\w-]+\.bench\.mjs( [\w,]+)*$/,
    how: {
      notRun: 'one benchmark, pinned: a minute of load on both cores, numbers rather than pass/fail',
      check: (words) => expect(existsSync(words.find((w) => w.startsWith('bench/'))!)).toBe(true),
    },
  },
  {
    match: /^npm run job-schema$/,
    how: {
      notRun:
        'rewrites the tracked jobs/job.schema.json; test/config/jobs-examples.test.ts checks the ' +
        'committed file is what the script renders',
      check: ([, , script]) => expect(scripts()).toHaveProperty(script!),
    },
  },
  {
    match: /^npx vitest run test\/[\w-]+$/,
    how: {
      notRun: 'one folder of the suite, which CI runs whole (npm test)',
      check: ([, , , folder]) =>
        expect(readdirSync(folder!).filter((name) => name.endsWith('.test.ts'))).not.toEqual([]),
    },
  },
  {
    match: /^export (EMBEDPIPE_(BASE_URL|API_KEY)|REDIS_URL)=/,
    how: {
      notRun:
        'placeholder values for a real gateway and Redis; the commands run here get the emulator ' +
        "and a private redis-server instead (the emulator's URL and keys, REDIS_URL)",
      check: ([, assignment]) => {
        const [name, value] = assignment!.split('=') as [string, string];
        expect(sourceMentions(`'${name}'`), `${name} is read nowhere in src/`).toBe(true);
        if (name === 'EMBEDPIPE_BASE_URL') expect(value).toMatch(/\/v1$/);
        if (name === 'REDIS_URL') expect(value).toMatch(/^redis:\/\//);
      },
    },
  },
  {
    match: /^docker compose up --build --scale worker=\d+$/,
    how: {
      notRun:
        'builds the image and starts Redis, the emulator and workers in containers (no Docker ' +
        'here); CI checks docker-compose.yml with `docker-compose config`, and the commands the ' +
        'containers run (enqueue, worker, status) run here against a private redis-server',
      check: () => expect(readFileSync('docker-compose.yml', 'utf8')).toMatch(/^ {2}worker:$/m),
    },
  },
];

const ruleFor = (command: DocCommand) => RULES.find((rule) => rule.match.test(command.words.join(' ')));

// ---------------------------------------------------------------------------------------------
// The datasets the docs' commands read, the CLI's --help, and what this machine has.

const MODEL = 'emu/embed-small';
/** The docs' NEW_MODEL of a migration: a test model whose vectors carry word overlap (see versions.md). */
const NEW_MODEL = 'emu/bow-large';
const STT_MODEL = 'emu/whisper-tiny';
/** The docs' job file: run here with its /data paths and its model replaced by flags (which override it). */
const NIGHTLY_JOB = 'jobs/nightly.example.json';
const root = await tempFolder('embedpipe-docs-');
const corpus = join(root, 'docs.csv');
const calls = join(root, 'calls');
const queries = join(root, 'queries.jsonl');
const gatewayConfig = join(root, 'gateway.json');
const lance = join(root, 'lance');
const out = (name: string) => join(root, 'out', name);
const QUERY = 'how do I roll back a dataset';

/** The docs' value for an option (`-k 5`), or its placeholder (`-k N`), as run here. */
const OPTION_VALUES: Record<string, (subcommand: string | undefined) => string | Promise<string>> = {
  '--input': () => corpus,
  '--model': (sub) => (sub === 'transcribe' ? STT_MODEL : MODEL),
  '--out': () => out('docs'),
  '--version': () => oldVersion(out('docs')),
  '--switch': () => oldVersion(out('docs')),
  '--remove': () => oldVersion(out('docs')),
  '--versions': async () => `${await oldVersion(out('docs'))},${basename(await readlink(out('docs')))}`,
  '--queries': () => queries,
  '--variants': () => 'dims:128,int8,binary',
  '--sample': () => '3',
  '--seed': () => '7',
  '-k': () => '10', // eval's minimum
  '--concurrency': () => '2',
  '--offset': () => '0',
  '--limit': () => '5',
  '--language': () => 'en',
  '--latency': () => '1',
  '--config': () => gatewayConfig,
};
/** Options whose value is replaced whatever the docs wrote: a fixed port may be taken, a Redis is ours. */
const ALWAYS_REPLACED: Record<string, () => string | Promise<string>> = {
  '--port': () => '0',
  '--metrics-port': () => '0',
  '--redis': async () => (await redis()).url,
};
/** `DIR`, `N`, `vN`, `vN,vM`, `xx`, `NEW_MODEL`: what a synopsis leaves to the reader. */
const isPlaceholder = (word: string) => /^([A-Z][A-Z_]*|v[NM]|vN,vM|xx)$/.test(word);

/** A command as run here: its words, and the environment it runs with. */
interface Substituted {
  words: string[];
  env: Record<string, string>;
}

/** The docs' words with their paths, models, stores, ports and placeholders replaced by this file's. */
async function substitute(command: DocCommand): Promise<Substituted> {
  if (command.words[0] !== 'embedpipe') {
    const arrow = command.text.includes("format='arrow'");
    if (arrow) await arrowDataset();
    const words = command.words.map((word) =>
      word.replace(/\bout\/(docs|calls)\b/g, (_, name) => out(arrow ? 'docs-arrow' : name)),
    );
    return { words, env: {} };
  }
  const given = synopsisAsCommand(command.words);
  const sub = subcommandOf(given);
  const words: string[] = [];
  for (const [i, word] of given.entries()) {
    const option = i > 0 && given[i - 1]!.startsWith('-') ? given[i - 1]! : undefined;
    words.push(await substituteWord(word, option, sub));
  }
  const left = words.filter(isPlaceholder);
  if (left.length > 0) throw new Error(`${where(command)}: no value here for ${left.join(', ')}`);

  // A job file's input, model and output stand for the temp ones: flags override the job file.
  const overrides: Record<string, string> = { '--input': corpus, '--model': MODEL, '--out': out('nightly') };
  if (sub === 'enqueue') {
    // Each enqueue plans a dataset of its own, so the worker that follows it has batches to embed.
    overrides['--out'] = out(`queued-${enqueued.length + 1}`);
    const at = words.indexOf('--out');
    if (at >= 0) words.splice(at, 2);
  }
  if (words.includes(NIGHTLY_JOB) || sub === 'enqueue') {
    for (const [flag, value] of Object.entries(overrides)) if (!words.includes(flag)) words.push(flag, value);
  }
  // The docs' gateway is EMBEDPIPE_BASE_URL (a placeholder): the emulator stands in for it, started
  // by the command itself (--emulator) where it can, else this file's.
  const inProcess =
    sub === 'run' || sub === 'search' || sub === 'eval' || (sub === 'verify' && words.includes('--sample'));
  if (inProcess) words.push('--emulator');
  const queue = ['enqueue', 'worker', 'status', 'finalize', 'resume', 'retry-failed'].includes(sub ?? '');
  const env = inProcess ? {} : { ...gatewayEnv(), ...(queue ? { REDIS_URL: (await redis()).url } : {}) };
  return { words, env };
}

/** One word of an `embedpipe` command, as run here; `option` is the option it is the value of. */
async function substituteWord(
  word: string,
  option: string | undefined,
  sub: string | undefined,
): Promise<string> {
  const always = option === undefined ? undefined : ALWAYS_REPLACED[option];
  if (always) return always();
  if (isPlaceholder(word)) {
    if (word === 'NEW_MODEL') return NEW_MODEL;
    const value = option === undefined ? undefined : OPTION_VALUES[option];
    if (value) return value(sub);
    if (word === 'JOB') return NIGHTLY_JOB;
    if (word === 'DIR' || word === 'TARGET') return out('docs');
    if (word === 'RUN') return lastRun();
    if (word === 'TEXT') return QUERY;
    if (word === 'FILE' && sub === 'transcribe') return join(calls, 'intro.wav');
    return word; // reported by the caller
  }
  if (word === 'docs.csv') return corpus;
  if (word === 'calls/') return `${calls}/`;
  if (word === 'openai/text-embedding-3-small') return MODEL;
  if (word === 'openai/whisper-1') return STT_MODEL;
  if (/^v\d{6}$/.test(word)) return oldVersion(out('docs'));
  if (word.startsWith('postgres://app@db.internal:5432/search?'))
    return word.replace('postgres://app@db.internal:5432/search', (await postgres()).url);
  if (word.startsWith('lancedb:///srv/lance'))
    return word.replace('lancedb:///srv/lance', `lancedb://${lance}`);
  return word.replace(/\bout\/(docs|calls)\b/g, (_, name) => out(name));
}

/**
 * A version of the dataset at `dir` that is not its current one: the oldest. A page's earlier
 * commands may have removed or switched to the others; then one more run makes one.
 */
async function oldVersion(dir: string): Promise<string> {
  const old = async () => {
    const current = basename(await readlink(dir));
    return (await readdir(`${dir}.versions`)).filter((v) => /^v\d+$/.test(v) && v !== current).sort();
  };
  if ((await old()).length === 0) await embedpipe(...docsRun);
  return (await old())[0]!;
}

async function embedpipe(...args: string[]) {
  const r = await runCli(args);
  expect(r.code, `embedpipe ${args.join(' ')}\n${r.stderr}`).toBe(0);
  return r;
}

let arrowBuilt: Promise<unknown> | undefined;
/** An Arrow IPC dataset, for the pyarrow line that reads one (built only where pyarrow is). */
function arrowDataset(): Promise<unknown> {
  arrowBuilt ??= embedpipe(
    ...['run', '--emulator', '--input', corpus, '--model', MODEL, '--out', out('docs-arrow')],
    ...['--output-format', 'arrow'],
  );
  return arrowBuilt;
}

// The servers the docs name: the gateway (this file's emulator), Redis and PostgreSQL, each
// started when a command first needs it.
let emulator: RunningEmulator | undefined;
let redisServer: Promise<RedisServer> | undefined;
let pgServer: Promise<PgliteServer> | undefined;
const redis = () => (redisServer ??= startRedisServer({ appendonly: false }));
/** PGlite takes ~10 s to start: beforeAll starts it, and the first postgres:// command waits for it. */
const postgres = () => (pgServer ??= startPglite());
const gatewayEnv = (): Record<string, string> => ({
  EMBEDPIPE_BASE_URL: emulator!.baseUrl,
  EMBEDPIPE_API_KEY: EMULATOR_API_KEY,
  EMBEDPIPE_MANAGEMENT_KEY: EMULATOR_MANAGEMENT_KEY,
});

/** The distributed runs the docs' `enqueue` commands started, in order. */
const enqueued: Array<{ runId: string; version: string; outDir: string }> = [];
function lastRun(): string {
  const run = enqueued.at(-1);
  if (!run) throw new Error('RUN: no `embedpipe enqueue` ran before this command in the docs');
  return run.runId;
}

/** Each subcommand of the built CLI, with the --flags its --help lists. */
const help = new Map<string, Set<string>>();
const docsRun = ['run', '--emulator', '--input', corpus, '--model', MODEL, '--out', out('docs')];

beforeAll(async () => {
  postgres().catch(() => {}); // awaited, and its failure reported, by the commands that use it
  // doc-1 is the id docs/output.md's nearest-neighbour query probes. The others are long enough
  // (8+ words) for `eval` to draw known-item queries from, and distinct enough for a bag of words.
  const rows = [
    'id,text',
    'doc-1,"Apples, pears and plums: a first document."',
    'doc-2,"Roll back a dataset with the switch option of datasets, then verify the version."',
    'doc-3,"Grüne Äpfel aus dem Alten Land werden im Herbst geerntet und lange gelagert."',
    'doc-4,"東京 の 夜景 は 高い ビル の 上 から 見る と とても 美しい"',
    'doc-5,"A ""quoted"" phrase, commas, and a second ""quote"" keep the CSV reader honest."',
    'doc-6,"Nightly runs send only the chunks whose text changed since the last version."',
    'doc-7,"Workers on many machines share one Redis queue and one output folder."',
    'doc-8,"Vector stores such as pgvector and LanceDB receive only the rows that differ."',
  ];
  await writeFile(corpus, `${rows.join('\n')}\n`);
  await mkdir(join(calls, 'team'), { recursive: true });
  await writeFile(join(calls, 'team', '2024-05-02.wav'), wav({ seconds: 1 }));
  await writeFile(join(calls, 'intro.wav'), wav({ seconds: 1, seed: 2 }));
  const relevant = [
    { query: 'roll back a dataset', relevant: ['doc-2'] },
    { query: 'workers share a Redis queue', relevant: ['doc-7'] },
    { query: 'rows a vector store receives', relevant: ['doc-8'] },
  ];
  await writeFile(queries, relevant.map((q) => `${JSON.stringify(q)}\n`).join(''));
  await writeFile(gatewayConfig, `${JSON.stringify({ members: 12 })}\n`);
  emulator = await startEmulator({ recordRequests: false });

  const audio = ['run', '--emulator', '--input', calls, '--model', MODEL, '--stt-model', STT_MODEL];
  const top = await runCli(['--help']);
  const subcommands = [...section(top.stdout, 'Commands').matchAll(/^ {2}([a-z][a-z-]*) /gm)]
    .map((m) => m[1]!)
    .filter((name) => name !== 'help');
  await Promise.all([
    // Two versions of the docs' dataset, so `datasets DIR --remove vN` has an old one to remove.
    embedpipe(...docsRun).then(() => embedpipe(...docsRun)),
    embedpipe(...audio, '--out', out('calls')),
    ...subcommands.map(async (name) => {
      const r = await runCli([name, '--help']);
      const flags = section(r.stdout, 'Options').matchAll(/^ {2}(?:-\w, )?(--[a-z0-9-]+)/gm);
      help.set(name, new Set([...flags].map((m) => m[1]!)));
    }),
  ]);
  startRuns();
}, 90_000);

afterAll(async () => {
  for (const child of spawned)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await emulator?.close();
  await Promise.all([
    redisServer?.then((server) => server.stop()),
    pgServer?.then((server) => server.stop()).catch(() => {}),
  ]);
}, 30_000);

/** A section of commander's help (`Options:`, `Commands:`), up to the next blank line. */
function section(text: string, title: string): string {
  return text.split(`\n${title}:\n`)[1]?.split('\n\n')[0] ?? '';
}

const has = (program: string, ...args: string[]) => spawnSync(program, args).status === 0;
const DUCKDB_CLI = has('duckdb', '--version');
const PYTHON = has('python3', '--version');
const pythonModule = new Map<string, boolean>();

/** Why a `python3 -c` line cannot run here, or undefined when python3 has every module it imports. */
function pythonMissing(code: string): string | undefined {
  if (!PYTHON) return 'no python3 here';
  const modules = [...code.matchAll(/\bimport (\w+)/g)].map((m) => m[1]!);
  // pandas reads Parquet through pyarrow (the docs say so).
  if (modules.includes('pandas')) modules.push('pyarrow');
  for (const m of modules) if (!pythonModule.has(m)) pythonModule.set(m, has('python3', '-c', `import ${m}`));
  const missing = modules.filter((m) => !pythonModule.get(m));
  return missing.length > 0 ? `python3 here has no ${missing.join(', ')}` : undefined;
}

const scripts = (): Record<string, string> => JSON.parse(readFileSync('package.json', 'utf8')).scripts;

/** Whether some file of src/ contains `text`. */
function sourceMentions(text: string): boolean {
  return readdirSync('src', { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .some((file) => readFileSync(join('src', file), 'utf8').includes(text));
}

/** What CI runs: .ci/run's commands, and the commands of the npm scripts those call. */
function ciCommands(): string[][] {
  const lines = shellCommands(readFileSync('.ci/run', 'utf8')).map((c) => c.words);
  const fromScripts = lines.flatMap(([program, a, b]) => {
    const script = program === 'npm' ? (a === 'run' ? b : a) : undefined;
    const body = script === undefined ? undefined : scripts()[script];
    return body === undefined ? [] : shellCommands(body).map((c) => c.words);
  });
  return [...lines, ...fromScripts];
}

/** Whether `ran` is `words` with, at most, more options between or after them (`npm ci --no-audit`). */
function sameCommand(words: string[], ran: string[]): boolean {
  let next = 0;
  for (const word of ran) if (word === words[next]) next++;
  return ran[0] === words[0] && next === words.length;
}

// ---------------------------------------------------------------------------------------------

const where = (c: DocCommand) => `${c.file}:${c.line}`;
const shortText = (c: DocCommand) => {
  const [first, ...rest] = c.text.split('\n');
  const text = rest.length > 0 ? `${first} …` : first!;
  return text.length > 100 ? `${text.slice(0, 99)}…` : text;
};

describe('reading commands out of Markdown (test/docs/fixtures/commands.md)', () => {
  it('joins continuations, drops comments, splits && and ;, keeps quoted text, reads inline spans', () => {
    const found = commandsIn('commands.md', readFileSync('test/docs/fixtures/commands.md', 'utf8'));
    expect(found.map((c) => [c.line, c.from, c.words])).toEqual([
      [4, 'block', ['npm', 'ci']],
      [4, 'block', ['npm', 'run', 'demo']],
      [
        6,
        'block',
        ['embedpipe', 'run', '--input', 'docs.csv', '--model', 'emu/embed-small', '--out', 'out/my docs'],
      ],
      [8, 'block', ['duckdb', '-c', `\nSELECT 'a # not a comment' AS s,\n       "quoted" AS q`]],
      [10, 'block', ['embedpipe', 'verify', 'out/docs']],
      [17, 'inline', ['embedpipe', 'datasets', 'DIR', '[--switch', 'vN]', '[--json]']],
      [18, 'inline', ['embedpipe', 'members', '[--offset', 'N', '|', '--all]']],
      [18, 'inline', ['embedpipe', 'finalize', 'RUN']],
    ]);
    expect(found[2]!.text).toBe(
      'npx embedpipe run --input docs.csv --model emu/embed-small --out "out/my docs"',
    );
    expect(flagsOf(found[5]!.words)).toEqual(['--switch', '--json']);
    expect(subcommandOf(found[5]!.words)).toBe('datasets');
  });

  it('runs a synopsis with its optional parts, the first of alternatives, and no …', () => {
    expect(synopsisAsCommand(['embedpipe', 'datasets', 'DIR', '[--switch', 'vN]', '[--json]'])).toEqual([
      'embedpipe',
      'datasets',
      'DIR',
      '--switch',
      'vN',
      '--json',
    ]);
    const members = ['embedpipe', 'members', '[--offset', 'N', '--limit', 'N', '|', '--all]', '[--json]'];
    expect(synopsisAsCommand(members)).toEqual([
      'embedpipe',
      'members',
      '--offset',
      'N',
      '--limit',
      'N',
      '--json',
    ]);
    expect(synopsisAsCommand(['embedpipe', 'run', '[JOB]', '[--out', 'DIR]', '…'])).toEqual([
      'embedpipe',
      'run',
      'JOB',
      '--out',
      'DIR',
    ]);
    expect(synopsisAsCommand(['embedpipe', 'verify', 'out/docs'])).toEqual([
      'embedpipe',
      'verify',
      'out/docs',
    ]);
  });
});

describe('the commands the docs show', () => {
  it('are found on every page that has any, blocks and inline spans alike', () => {
    const perPage = Object.fromEntries(
      PAGES.map((page) => [page, COMMANDS.filter((c) => c.file === page).length]),
    );
    expect(perPage['README.md']).toBeGreaterThan(5);
    expect(COMMANDS.filter((c) => c.from === 'block').length).toBeGreaterThan(10);
    expect(COMMANDS.filter((c) => c.from === 'inline').length).toBeGreaterThan(10);
  });

  it('every fenced block names its language, so no shell block goes unread', () => {
    const unnamed = PAGES.flatMap((page) =>
      splitFences(readFileSync(page, 'utf8'))
        .fences.filter((f) => !SHELL_FENCES.has(f.lang) && !OTHER_FENCES.has(f.lang))
        .map((f) => `${page}:${f.line} \`\`\`${f.lang}`),
    );
    expect(unnamed, 'label each fence: sh for commands, text for a listing').toEqual([]);
  });

  it("every --flag the prose names is an option of some embedpipe command (or node's, docker's)", () => {
    const OTHER_PROGRAMS_FLAGS = [
      '--build', // docker compose up
      '--scale',
      '--expose-gc', // node / V8, in docs/benchmarks.md
      '--max-old-space-size',
      '--max-semi-space-size',
      '--cpu-prof',
      '--heapsnapshot-signal',
      '--no-liftoff',
      '--no-wasm-dynamic-tiering',
      '--min-semi-space-size',
      '--trace-gc',
      '--interrupt-budget',
      '--ticks-before-optimization',
      '--require',
      '--single-threaded-gc',
      '--single-threaded',
      '--no-parallel-scavenge',
      '--no-concurrent-recompilation',
      '--maglev',
      '--liftoff-only',
      '--trace-opt',
      '--trace-deopt',
      '--max-inlined-bytecode-size-cumulative',
      '--max-inlined-bytecode-size',
      '--no-turbo-inlining',
      '--heap-growing-percent',
      '--perf-basic-prof',
      '--interpreted-frames-native-stack',
      '--always-sparkplug',
      '--no-lazy-feedback-allocation',
      '--no-use-osr',
      '--no-turbo-loop-peeling',
      '--stack-size',
    ];
    const known = new Set([...help.values()].flatMap((flags) => [...flags]));
    const unknown = PAGES.flatMap((page) =>
      readFileSync(page, 'utf8')
        .split('\n')
        .flatMap((text, i) =>
          [...text.matchAll(/(?<![\w-])--[a-z][a-z0-9-]*/g)]
            .map((m) => m[0])
            .filter((flag) => !known.has(flag) && !OTHER_PROGRAMS_FLAGS.includes(flag))
            .map((flag) => `${page}:${i + 1} ${flag}`),
        ),
    );
    expect(unknown).toEqual([]);
  });
});

for (const page of PAGES) {
  const commands = COMMANDS.filter((c) => c.file === page);
  if (commands.length === 0) continue;
  describe(page, () => {
    for (const command of commands) {
      const rule = ruleFor(command);
      const how = rule === undefined ? 'no rule' : typeof rule.how === 'string' ? rule.how : 'not run';
      const skip = skipReason(command);
      const name = `${command.line} [${how}${skip ? `, skipped: ${skip}` : ''}] ${shortText(command)}`;

      it.skipIf(skipUnlessCi(Boolean(skip)))(name, async () => {
        if (skip) expect.fail(`this command must run in CI, but it would be skipped: ${skip}`);
        if (command.words[0] === 'embedpipe') checkAgainstHelp(command);
        if (rule === undefined) {
          expect.fail(
            `${where(command)}: \`${shortText(command)}\` matches no rule: add one to RULES in ` +
              'test/docs/commands-in-docs.test.ts (run it here, find it in CI, or say why it cannot run)',
          );
        }
        if (rule.how === 'run') await runs.get(command);
        else if (rule.how === 'ci') {
          expect(
            ciCommands().some((ran) => sameCommand(command.words, ran)),
            `${where(command)}: CI (.ci/run and the npm scripts it calls) does not run \`${command.text}\``,
          ).toBe(true);
        } else rule.how.check?.(command.words);
      });
    }
  });
}

/** The subcommand exists, and each --flag is in its --help. */
function checkAgainstHelp(command: DocCommand): void {
  const sub = subcommandOf(command.words);
  const flags = sub === undefined ? undefined : help.get(sub);
  if (flags === undefined) expect.fail(`${where(command)}: embedpipe has no subcommand ${sub}`);
  const unknown = flagsOf(command.words).filter((flag) => !flags.has(flag));
  expect(unknown, `${where(command)}: not options of \`embedpipe ${sub} --help\``).toEqual([]);
}

const exec = promisify(execFile);

/** Why a command of a 'run' rule is skipped here, if it is. */
function skipReason(command: DocCommand): string | undefined {
  if (ruleFor(command)?.how !== 'run' || command.words[0] !== 'python3') return undefined;
  return pythonMissing(command.words[2]!);
}

/**
 * The commands the docs show share state as a reader's would (the docs' dataset, a run id, a store),
 * so they run in the pages' order; but commands of unrelated state run side by side, each lane in
 * order: the distributed commands (a Redis and datasets of their own), the gateway's one-off
 * commands, the audio corpus's, and everything else (the docs' dataset, the stores).
 */
function laneOf(command: DocCommand): string {
  const sub = command.words[0] === 'embedpipe' ? subcommandOf(command.words) : undefined;
  if (['enqueue', 'worker', 'status', 'finalize', 'resume', 'retry-failed'].includes(sub ?? ''))
    return 'queue';
  if (['models', 'embed', 'transcribe', 'members', 'gateway'].includes(sub ?? '')) return 'gateway';
  if (command.words.some((word) => /^calls\/$|\bout\/calls\b/.test(word))) return 'calls';
  return 'datasets';
}

/** Each run command's run, started once beforeAll is done, awaited (and reported) by its test. */
const runs = new Map<DocCommand, Promise<void>>();
/** Runs by their words here: a command the docs show twice runs once. */
const ran = new Map<string, Promise<void>>();

function startRuns(): void {
  const lanes = new Map<string, Promise<unknown>>();
  for (const command of COMMANDS) {
    if (ruleFor(command)?.how !== 'run' || skipReason(command)) continue;
    const lane = laneOf(command);
    const result = (lanes.get(lane) ?? Promise.resolve()).then(() => runHere(command));
    result.catch(() => {}); // reported by the command's test
    runs.set(command, result);
    lanes.set(
      lane,
      result.catch(() => {}),
    );
  }
}

async function runHere(command: DocCommand): Promise<void> {
  const { words, env } = await substitute(command);
  // Every enqueue plans a run of its own and every worker drains what was enqueued before it.
  const key = ['enqueue', 'worker'].includes(subcommandOf(words) ?? '')
    ? `${ran.size}`
    : JSON.stringify(words);
  if (!ran.has(key)) ran.set(key, run(words, env));
  await ran.get(key);
}

async function run([program, ...args]: string[], env: Record<string, string>): Promise<void> {
  if (program === 'embedpipe') {
    const sub = subcommandOf(['embedpipe', ...args]);
    if (sub === 'worker') await runWorker(args, env);
    else if (sub === 'gateway') await runGateway(args);
    else {
      const r = await runCli(args, env);
      expect(r.code, `embedpipe ${args.join(' ')}\n${r.stderr}`).toBe(0);
      if (sub === 'enqueue') enqueued.push(enqueueSummary(r.stdout));
    }
  } else if (program === 'duckdb' && !DUCKDB_CLI) {
    // No duckdb CLI on this machine: the same SQL through DuckDB's own engine (@duckdb/node-api).
    expect(args[0]).toBe('-c');
    expect((await query(args[1]!)).length, args[1]).toBeGreaterThan(0);
  } else {
    const { stdout } = await exec(program!, args, { timeout: 20_000 });
    expect(stdout.trim().length, `${program} printed nothing`).toBeGreaterThan(0);
  }
}

/** What `enqueue` printed: `enqueued run <id>: … into version <v> of <dir>` (or its --json). */
function enqueueSummary(stdout: string): (typeof enqueued)[number] {
  if (stdout.trimStart().startsWith('{')) return JSON.parse(stdout);
  const m = /^enqueued run (\S+): .* into version (\S+) of (.+)$/m.exec(stdout);
  if (!m) throw new Error(`enqueue printed no run id:\n${stdout}`);
  return { runId: m[1]!, version: m[2]!, outDir: m[3]! };
}

/** Children that serve until stopped (workers, gateways): killed after the file if a test left one. */
const spawned: ReturnType<typeof spawnCli>[] = [];

/** A worker runs until SIGTERM: here, until every run enqueued so far is switched in, then it must exit 0. */
async function runWorker(args: string[], env: Record<string, string>): Promise<void> {
  const child = spawnCli(args, env);
  spawned.push(child);
  let log = '';
  child.stderr?.on('data', (data: Buffer) => {
    log += data.toString('utf8');
  });
  const exited = child.result.then((r) => {
    throw new Error(`the worker exited (${r.code}) before it was stopped:\n${r.stderr}`);
  });
  exited.catch(() => {}); // it exits once stopped, too: only the race below reads this
  const switched = async (run: (typeof enqueued)[number]) =>
    (await readlink(run.outDir).catch(() => undefined)) ===
    join(`${basename(run.outDir)}.versions`, run.version);
  await Promise.race([
    exited,
    waitFor('the worker to start, and every enqueued run to be switched in', async () => {
      if (!log.includes('"worker started"')) return false;
      return (await Promise.all(enqueued.map(switched))).every(Boolean);
    }),
  ]);
  child.kill('SIGTERM');
  const r = await child.result;
  expect(r.code, `embedpipe ${args.join(' ')} after SIGTERM\n${r.stderr}`).toBe(0);
}

/** The emulator serves until SIGTERM: here, until it printed its URL and answered a models listing. */
async function runGateway(args: string[]): Promise<void> {
  const child = spawnCli(args);
  spawned.push(child);
  let printed = '';
  child.stdout?.on('data', (data: Buffer) => {
    printed += data.toString('utf8');
  });
  const url = await waitFor('the gateway to print its URL', () => /^http:\S+\/v1$/m.exec(printed)?.[0]);
  const models = await fetch(`${url}/embeddings/models`, {
    headers: { authorization: `Bearer ${EMULATOR_API_KEY}` },
  });
  expect(models.status).toBe(200);
  child.kill('SIGTERM');
  const r = await child.result;
  expect(r.code, `embedpipe ${args.join(' ')} after SIGTERM\n${r.stderr}`).toBe(0);
}

async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined | false> | T | undefined | false,
): Promise<T> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
