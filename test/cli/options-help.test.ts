/**
 * Every "(default: …)" that any command's `--help` shows comes from the options table: each is what
 * the table holds for that option (its default, in the flag's unit; its note; or the environment
 * variable read instead), and every option with a default shows it. Every option a command's help
 * lists is a table option (OPTIONS or the command's own, OWN_OPTIONS), and no file of src/cli types
 * a default by hand.
 */
import { readdir, readFile } from 'node:fs/promises';
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { registerDatasets } from '../../src/cli/datasets.js';
import { registerEmbed } from '../../src/cli/embed.js';
import { registerEnqueue } from '../../src/cli/enqueue.js';
import { registerEval } from '../../src/cli/eval.js';
import { registerGateway } from '../../src/cli/gateway.js';
import { registerMembers } from '../../src/cli/members.js';
import { registerModels } from '../../src/cli/models.js';
import { registerQueueAdmin } from '../../src/cli/queue-admin.js';
import { registerRun } from '../../src/cli/run.js';
import { registerSearch } from '../../src/cli/search.js';
import { registerSync } from '../../src/cli/sync.js';
import { registerTranscribe } from '../../src/cli/transcribe.js';
import { registerVerify } from '../../src/cli/verify.js';
import { registerWorker } from '../../src/cli/worker.js';
import { DEFAULTS } from '../../src/config/defaults.js';
import {
  type CommandName,
  type FlagSpec,
  longFlag,
  optionEntries,
  ownOptionEntries,
} from '../../src/config/options-table.js';

/** The program as main.ts builds it (main.ts parses the command line when loaded: not importable). */
function program(): Command {
  const root = new Command('embedpipe').configureHelp({ helpWidth: 10_000 });
  for (const register of [
    registerRun,
    registerEnqueue,
    registerWorker,
    registerQueueAdmin,
    registerDatasets,
    registerVerify,
    registerSync,
    registerSearch,
    registerEval,
    registerModels,
    registerMembers,
    registerTranscribe,
    registerEmbed,
    registerGateway,
  ])
    register(root);
  return root;
}

const COMMANDS = program().commands.map((command) => command.name()) as CommandName[];

/** `embedpipe NAME --help`, one option a line (no wrapping). */
function help(name: string): string {
  return program()
    .commands.find((command) => command.name() === name)!
    .helpInformation();
}

/** Each option line of a help text: its long flag and its description (`-k, --k <n>` included). */
function optionLines(text: string): Map<string, string> {
  const lines = new Map<string, string>();
  for (const line of text.split('\n')) {
    const match = /^ {2}(?:-\w, )?(--[\w-]+)(?: <[^>]+>)? {2,}(.*)$/.exec(line);
    if (match) lines.set(match[1]!, match[2]!);
  }
  return lines;
}

/** What the table says applies when nothing sets the option, worked out here from its fields. */
function expectedDefault(spec: FlagSpec): string | undefined {
  if (spec.type.kind === 'switch') return undefined;
  if (spec.defaultNote) return spec.defaultNote;
  if (spec.env) return `$${spec.env}`;
  if (typeof spec.default === 'number') return String(spec.default / (spec.scale ?? 1));
  return spec.default === undefined ? undefined : String(spec.default);
}

/** The table's options of `name`: those of OPTIONS it accepts, then its own. */
function tableSpecs(name: CommandName): [string, FlagSpec][] {
  return [
    ...optionEntries().filter(([, spec]) => spec.flag && spec.commands.includes(name)),
    ...ownOptionEntries(name),
  ];
}

it('the program has the commands main.ts registers', () => {
  expect(COMMANDS).toEqual(
    expect.arrayContaining(['run', 'finalize', 'eval', 'search', 'sync', 'verify', 'embed', 'gateway']),
  );
  expect(COMMANDS).toHaveLength(17);
});

describe.each(COMMANDS)('embedpipe %s --help', (name) => {
  const lines = optionLines(help(name));
  const specs = tableSpecs(name);

  it('lists every option the table gives the command, and no other', () => {
    for (const [key, spec] of specs) expect(lines.has(longFlag(spec)!), key).toBe(true);
    const negated = specs.flatMap(([, spec]) =>
      spec.type.kind === 'switch' && spec.type.negatedHelp !== undefined
        ? [`--no-${longFlag(spec)!.slice(2)}`]
        : [],
    );
    const fromTable = new Set([...specs.map(([, spec]) => longFlag(spec)), ...negated, '--help']);
    for (const flag of lines.keys()) expect(fromTable.has(flag), flag).toBe(true);
  });

  it("shows each option's default as the table holds it, and only that", () => {
    for (const [key, spec] of specs) {
      const shown = /\(default: (.*)\)$/.exec(lines.get(longFlag(spec)!)!)?.[1];
      expect(shown, key).toBe(expectedDefault(spec));
    }
    // The help shows no default of its own: every "(default: …)" belongs to a table option.
    const flags = new Set(specs.map(([, spec]) => longFlag(spec)));
    for (const [flag, description] of lines) {
      if (description.includes('(default:')) expect(flags.has(flag), flag).toBe(true);
    }
  });
});

describe('help text and defaults', () => {
  it('shows seconds for options set in seconds (the table holds ms)', () => {
    const worker = optionLines(help('worker'));
    expect(worker.get('--lock-duration')).toMatch(
      new RegExp(`\\(default: ${DEFAULTS.distributed.lockDurationMs / 1000}\\)$`),
    );
    expect(worker.get('--max-retry-after')).toMatch(
      new RegExp(`\\(default: ${DEFAULTS.retry.maxRetryAfterMs / 1000}\\)$`),
    );
    expect(worker.get('--concurrency')).toMatch(
      new RegExp(`requests in flight in this process.*1 to 1024 \\(default: ${DEFAULTS.concurrency}\\)$`),
    );
  });

  it("shows the one-off commands' defaults and bounds from DEFAULTS and the table", () => {
    expect(optionLines(help('eval')).get('--sample')).toMatch(
      new RegExp(`\\(default: ${DEFAULTS.eval.sample}\\)$`),
    );
    expect(optionLines(help('eval')).get('--k')).toMatch(
      new RegExp(`${DEFAULTS.eval.k} to 10000 \\(default: ${DEFAULTS.eval.k}\\)$`),
    );
    expect(optionLines(help('sync')).get('--sample')).toMatch(
      new RegExp(`\\(default: ${DEFAULTS.sync.verifySample}\\)$`),
    );
    expect(optionLines(help('search')).get('--k')).toMatch(
      new RegExp(`\\(default: ${DEFAULTS.search.k}\\)$`),
    );
    expect(optionLines(help('members')).get('--limit')).toBe('members per page, 1 to 100');
    for (const name of ['embed', 'models', 'members', 'transcribe', 'search', 'eval', 'verify', 'finalize']) {
      expect(optionLines(help(name)).get('--base-url'), name).toMatch(/\(default: \$EMBEDPIPE_BASE_URL\)$/);
    }
  });

  it('is typed by hand in no file of src/cli', async () => {
    const files = (await readdir('src/cli')).filter((file) => file.endsWith('.ts'));
    expect(files.length).toBeGreaterThan(20);
    for (const file of files) {
      const source = await readFile(`src/cli/${file}`, 'utf8');
      expect(source, file).not.toMatch(/\(default:/);
    }
  });

  it('declares every option through the table: no file of src/cli calls .option() or .requiredOption()', async () => {
    for (const file of await readdir('src/cli')) {
      if (!file.endsWith('.ts')) continue;
      const source = await readFile(`src/cli/${file}`, 'utf8');
      expect(source, file).not.toMatch(/\.(option|requiredOption)\(/);
    }
  });
});
