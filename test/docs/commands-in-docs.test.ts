/**
 * Every shell command README.md and docs/*.md show (their ```sh blocks, and the inline spans of
 * their prose that start with `embedpipe`, `npm`, `duckdb -c`, `python3 -c`, …) is checked here.
 * Each meets the first of RULES that matches it, and is then either
 *  - run here, against small datasets this file makes in beforeAll with the built CLI and its
 *    in-process emulator (the docs' paths, models and placeholders stand for the temp ones: see
 *    `substitute`), or
 *  - found among what CI runs (.ci/run, and the npm scripts it calls), or
 *  - not run, with the reason it cannot run here, and a lighter check instead.
 * Whatever its rule, an `embedpipe` command's subcommand must exist and each of its --flags must be
 * in that subcommand's --help. A command no rule matches fails with its page and line: a new
 * command in the docs needs a rule.
 */
import { execFile, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, readdir, readlink, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { wav } from '../helpers/audio.js';
import { runCli } from '../helpers/cli.js';
import { query } from '../helpers/duckdb.js';
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
  // Run here. `run` commands re-run a dataset beforeAll made (nothing left to embed), with
  // --emulator in place of the docs' gateway; `vN` is an old version of that dataset.
  { match: /^embedpipe run --input (docs\.csv|calls\/) /, how: 'run' },
  { match: /^embedpipe (verify|datasets) (out\/docs|DIR)( --remove vN)?$/, how: 'run' },
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
    match: /^export EMBEDPIPE_(BASE_URL|API_KEY)=/,
    how: {
      notRun: 'placeholder values for a real gateway; the commands run here use the emulator instead',
      check: ([, assignment]) => {
        const [name, value] = assignment!.split('=') as [string, string];
        expect(sourceMentions(`'${name}'`), `${name} is read nowhere in src/`).toBe(true);
        if (name === 'EMBEDPIPE_BASE_URL') expect(value).toMatch(/\/v1$/);
      },
    },
  },
  {
    match: /^docker compose up --build --scale worker=\d+$/,
    how: {
      notRun:
        'builds the image and starts Redis, the emulator and workers in containers; CI checks ' +
        'docker-compose.yml with `docker-compose config`',
      check: () => expect(readFileSync('docker-compose.yml', 'utf8')).toMatch(/^ {2}worker:$/m),
    },
  },
  {
    match: /^embedpipe (enqueue|worker|status) .*--redis redis:\/\/redis:6379/,
    how: {
      notRun:
        "redis://redis is the compose network's Redis; test/e2e/distributed.test.ts runs enqueue, " +
        'worker and status against a private redis-server',
    },
  },
  {
    match: /^embedpipe (sync|search|run) .*(postgres:\/\/app@db\.internal|lancedb:\/\/\/srv\/|out\/docs ")/,
    how: {
      notRun:
        'a store on a server named as an example, or a query through a real gateway; ' +
        'test/e2e/sync.test.ts runs sync, --verify, --repair and search against PGlite + pgvector and LanceDB',
    },
  },
  {
    match: /^embedpipe gateway --port \d+$/,
    how: {
      notRun:
        'serves until stopped, on a port that may be taken; test/e2e/commands.test.ts runs ' +
        '`gateway --port 0` and calls it',
    },
  },
  {
    match: /^embedpipe run jobs\/nightly\.example\.json( --json)?$/,
    how: {
      notRun:
        'reads /data/docs and calls a real gateway; test/config/jobs-examples.test.ts loads the job file',
      check: ([, , job]) => expect(existsSync(job!), `${job} is missing`).toBe(true),
    },
  },
  {
    match: /^embedpipe [a-z-]+( --[a-z-]+)?$/,
    how: { notRun: 'a command named in the prose (`embedpipe status`, `embedpipe run --max-cost`)' },
  },
  {
    match: /^embedpipe [a-z-]+ .*(\[|…|\b[A-Z]+\b|\bvN\b)/,
    how: { notRun: 'a synopsis: CAPITALS, vN and [brackets] are placeholders' },
  },
];

const ruleFor = (command: DocCommand) => RULES.find((rule) => rule.match.test(command.words.join(' ')));

// ---------------------------------------------------------------------------------------------
// The datasets the docs' commands read, the CLI's --help, and what this machine has.

const MODEL = 'emu/embed-small';
const STT_MODEL = 'emu/whisper-tiny';
const root = await tempFolder('embedpipe-docs-');
const corpus = join(root, 'docs.csv');
const calls = join(root, 'calls');
const out = (name: string) => join(root, 'out', name);

/** The docs' words with their paths, models and placeholders replaced by this file's. */
async function substitute(command: DocCommand): Promise<string[]> {
  const arrow = command.text.includes("format='arrow'");
  const words: string[] = [];
  for (const word of command.words) {
    if (word === 'docs.csv') words.push(corpus);
    else if (word === 'calls/') words.push(`${calls}/`);
    else if (word === 'DIR') words.push(out('docs'));
    else if (word === 'vN') words.push(await oldVersion(out('docs')));
    else if (word === 'openai/text-embedding-3-small') words.push(MODEL);
    else if (word === 'openai/whisper-1') words.push(STT_MODEL);
    else words.push(word.replace(/\bout\/(docs|calls)\b/g, (_, name) => out(arrow ? 'docs-arrow' : name)));
  }
  // The docs' gateway is EMBEDPIPE_BASE_URL (a placeholder): the emulator stands in for it.
  if (words[1] === 'run') words.push('--emulator');
  if (arrow) await arrowDataset();
  return words;
}

/** A version of the dataset at `dir` that is not its current one. */
async function oldVersion(dir: string): Promise<string> {
  const current = basename(await readlink(dir));
  const old = (await readdir(`${dir}.versions`)).filter((v) => /^v\d+$/.test(v) && v !== current).sort();
  if (old.length === 0) throw new Error(`${dir} has no version besides the current ${current}`);
  return old[0]!;
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

/** Each subcommand of the built CLI, with the --flags its --help lists. */
const help = new Map<string, Set<string>>();

beforeAll(async () => {
  // doc-1 is the id docs/output.md's nearest-neighbour query probes.
  const rows = [
    'id,text',
    'doc-1,"Apples, pears and plums: a first document."',
    ...[2, 3, 4, 5, 6].map((i) => `doc-${i},"Document ${i}: grüne Äpfel, 東京, ""quoted"" words."`),
  ];
  await writeFile(corpus, `${rows.join('\n')}\n`);
  await mkdir(join(calls, 'team'), { recursive: true });
  await writeFile(join(calls, 'team', '2024-05-02.wav'), wav({ seconds: 1 }));
  await writeFile(join(calls, 'intro.wav'), wav({ seconds: 1, seed: 2 }));

  const docs = ['run', '--emulator', '--input', corpus, '--model', MODEL, '--out', out('docs')];
  const audio = ['run', '--emulator', '--input', calls, '--model', MODEL, '--stt-model', STT_MODEL];
  const top = await runCli(['--help']);
  const subcommands = [...section(top.stdout, 'Commands').matchAll(/^ {2}([a-z][a-z-]*) /gm)]
    .map((m) => m[1]!)
    .filter((name) => name !== 'help');
  await Promise.all([
    // Two versions of the docs' dataset, so `datasets DIR --remove vN` has an old one to remove.
    embedpipe(...docs).then(() => embedpipe(...docs)),
    embedpipe(...audio, '--out', out('calls')),
    ...subcommands.map(async (name) => {
      const r = await runCli([name, '--help']);
      const flags = section(r.stdout, 'Options').matchAll(/^ {2}(?:-\w, )?(--[a-z0-9-]+)/gm);
      help.set(name, new Set([...flags].map((m) => m[1]!)));
    }),
  ]);
}, 90_000);

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
      const skip = rule?.how === 'run' && command.words[0] === 'python3' && pythonMissing(command.words[2]!);
      const name = `${command.line} [${how}${skip ? `, skipped: ${skip}` : ''}] ${shortText(command)}`;

      it.skipIf(Boolean(skip))(name, async () => {
        if (command.words[0] === 'embedpipe') checkAgainstHelp(command);
        if (rule === undefined) {
          expect.fail(
            `${where(command)}: \`${shortText(command)}\` matches no rule: add one to RULES in ` +
              'test/docs/commands-in-docs.test.ts (run it here, find it in CI, or say why it cannot run)',
          );
        }
        if (rule.how === 'run') await runHere(command);
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

/** Commands run so far, by their words here: a command the docs show twice runs once. */
const ran = new Map<string, Promise<void>>();

async function runHere(command: DocCommand): Promise<void> {
  const words = await substitute(command);
  const key = JSON.stringify(words);
  if (!ran.has(key)) ran.set(key, run(words));
  await ran.get(key);
}

async function run([program, ...args]: string[]): Promise<void> {
  if (program === 'embedpipe') {
    await embedpipe(...args);
  } else if (program === 'duckdb' && !DUCKDB_CLI) {
    // No duckdb CLI on this machine: the same SQL through DuckDB's own engine (@duckdb/node-api).
    expect(args[0]).toBe('-c');
    expect((await query(args[1]!)).length, args[1]).toBeGreaterThan(0);
  } else {
    const { stdout } = await exec(program!, args, { timeout: 20_000 });
    expect(stdout.trim().length, `${program} printed nothing`).toBeGreaterThan(0);
  }
}
