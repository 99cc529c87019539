/**
 * Every "(default: …)" that `run`, `enqueue` and `worker --help` show comes from the options table:
 * each is what the table holds for that option (its default, in the flag's unit; its note; or the
 * environment variable read instead), and every option with a default shows it. The files that
 * declare those commands type no default by hand.
 */
import { readFile } from 'node:fs/promises';
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { registerEnqueue } from '../../src/cli/enqueue.js';
import { registerQueueAdmin } from '../../src/cli/queue-admin.js';
import { registerRun } from '../../src/cli/run.js';
import { registerWorker } from '../../src/cli/worker.js';
import { DEFAULTS } from '../../src/config/defaults.js';
import { longFlag, type OptionSpec, optionEntries } from '../../src/config/options-table.js';

/** `embedpipe NAME --help`, one option a line (no wrapping). */
function help(name: string): string {
  const root = new Command('embedpipe').configureHelp({ helpWidth: 10_000 });
  registerRun(root);
  registerEnqueue(root);
  registerWorker(root);
  registerQueueAdmin(root);
  return root.commands.find((command) => command.name() === name)!.helpInformation();
}

/** Each option line of a help text: its long flag and its description. */
function optionLines(text: string): Map<string, string> {
  const lines = new Map<string, string>();
  for (const line of text.split('\n')) {
    const match = /^ {2}(--[\w-]+)(?: <[^>]+>)? {2,}(.*)$/.exec(line);
    if (match) lines.set(match[1]!, match[2]!);
  }
  return lines;
}

/** What the table says applies when nothing sets the option, worked out here from its fields. */
function expectedDefault(spec: OptionSpec): string | undefined {
  if (spec.type.kind === 'switch') return undefined;
  if (spec.defaultNote) return spec.defaultNote;
  if (spec.env) return `$${spec.env}`;
  if (typeof spec.default === 'number') return String(spec.default / (spec.scale ?? 1));
  return spec.default === undefined ? undefined : String(spec.default);
}

describe.each(['run', 'enqueue', 'worker'])('embedpipe %s --help', (name) => {
  const lines = optionLines(help(name));
  const specs = optionEntries().filter(([, spec]) => spec.flag && spec.commands.includes(name as never));

  it('lists every option the table gives the command', () => {
    expect(specs.length).toBeGreaterThan(5);
    for (const [key, spec] of specs) expect(lines.has(longFlag(spec)!), key).toBe(true);
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
      /requests in flight in this process.*1 to 1024 \(default: 8\)$/,
    );
  });

  it('is typed by hand in none of the files that declare run, enqueue and worker', async () => {
    for (const file of ['run', 'enqueue', 'worker', 'queue-options', 'table-options']) {
      const source = await readFile(`src/cli/${file}.ts`, 'utf8');
      expect(source, file).not.toMatch(/\(default:/);
    }
  });
});
