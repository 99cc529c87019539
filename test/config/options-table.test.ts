/**
 * The options table (src/config/options-table.ts) is the one place an option is declared. These
 * tests check that what is derived from it covers the same options: the commander options of each
 * command, the job file's zod schema (so jobs/job.schema.json), and the resolvers, each of which
 * must react to every option it is handed; and that the table itself is consistent.
 */
import { Command, Option } from 'commander';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { registerEnqueue } from '../../src/cli/enqueue.js';
import { registerQueueAdmin } from '../../src/cli/queue-admin.js';
import { queueAddress } from '../../src/cli/queue-options.js';
import { registerRun } from '../../src/cli/run.js';
import { registerWorker } from '../../src/cli/worker.js';
import { ENV_NAMES } from '../../src/config/env.js';
import { jobFileSchema, parseJob } from '../../src/config/job.js';
import {
  type CommandName,
  type FlagSpec,
  longFlag,
  OPTIONS,
  type OptionName,
  type OptionSpec,
  OWN_OPTIONS,
  optionEntries,
  ownOptionEntries,
} from '../../src/config/options-table.js';
import { resolveRunSettings, resolveWorkerSettings } from '../../src/config/settings.js';
import { MEMBERS_LIMIT_MAX, MEMBERS_LIMIT_MIN } from '../../src/gateway/wire.js';

/** Every spec of the table: OPTIONS's, then each command's own, named `command.key`. */
function allSpecs(): [string, FlagSpec][] {
  return [
    ...optionEntries(),
    ...(Object.keys(OWN_OPTIONS) as CommandName[]).flatMap((command) =>
      ownOptionEntries(command).map(([key, spec]): [string, FlagSpec] => [`${command}.${key}`, spec]),
    ),
  ];
}

const ENV = { baseUrl: 'http://127.0.0.1:4000/v1', redisUrl: 'redis://127.0.0.1:6379' };

/** Options no resolver reads: the action passes them on as given (enqueue-action.ts, run-action.ts). */
const READ_BY_ACTIONS = new Set<OptionName>(['json', 'highWater', 'redisWait']);

/** Text options whose text has a grammar of its own. */
const TEXT_SAMPLES: Partial<Record<string, string>> = { '--switch-if <rule>': 'ndcg@10 >= current - 0.01' };
/** Lists whose items have a grammar: a valid sample each. */
const LIST_SAMPLES: Partial<Record<string, readonly string[]>> = {
  '--vector-type <a,b>': ['int8', 'binary'],
};

/** A valid value of the option that is not its default: as a flag, and as a job file holds it. */
function sample(spec: OptionSpec): { flag: unknown; job: unknown } {
  const type = spec.type;
  const same = (value: unknown) => ({ flag: value, job: value });
  const text = spec.flag === undefined ? undefined : TEXT_SAMPLES[spec.flag];
  if (text !== undefined) return same(text);
  switch (type.kind) {
    case 'int':
      return same(spec.default === type.min * (spec.scale ?? 1) ? type.min + 1 : type.min);
    case 'number':
      return same(type.min + 1);
    case 'enum':
      return same(type.choices.find((choice) => choice !== spec.default));
    case 'switch':
      return same(true);
    case 'url':
      return same('http://sample.test/v1');
    case 'list': {
      const items = (spec.flag === undefined ? undefined : LIST_SAMPLES[spec.flag]) ?? ['a', 'b'];
      return { flag: items.join(','), job: [...items] };
    }
    case 'provider-options':
      return { flag: '{"p":{"k":1}}', job: { p: { k: 1 } } };
    case 'encoding':
      return same('latin1');
    case 'language':
      return same('fr');
    default:
      return same('sample');
  }
}

const accepts = (spec: OptionSpec, command: CommandName) =>
  spec.flag !== undefined && spec.commands.includes(command);

/** The program as main.ts builds it, for run, enqueue, worker and the queue commands. */
function program(): Command {
  const root = new Command('embedpipe');
  registerRun(root);
  registerEnqueue(root);
  registerWorker(root);
  registerQueueAdmin(root);
  return root;
}

const commandOf = (root: Command, name: string) => root.commands.find((c) => c.name() === name)!;

describe('the options table', () => {
  it('is keyed by the attribute names commander gives the flags', () => {
    for (const [key, spec] of allSpecs()) {
      const attribute = key.split('.').at(-1);
      if (spec.flag !== undefined) expect(new Option(spec.flag).attributeName(), key).toBe(attribute);
    }
  });

  it('writes no default into a help text: help shows the one the table holds', () => {
    for (const [key, spec] of allSpecs()) expect(spec.help, key).not.toMatch(/default/i);
  });

  it('gives no command the same option twice (from OPTIONS and as its own)', () => {
    for (const command of Object.keys(OWN_OPTIONS) as CommandName[]) {
      for (const [key] of ownOptionEntries(command)) {
        const shared = (OPTIONS as Record<string, OptionSpec>)[key];
        expect(shared?.commands.includes(command) ?? false, `${command}.${key}`).toBe(false);
      }
    }
  });

  it("bounds members --limit by the gateway's page size", () => {
    expect(OWN_OPTIONS.members.limit.type).toEqual({
      kind: 'int',
      min: MEMBERS_LIMIT_MIN,
      max: MEMBERS_LIMIT_MAX,
    });
  });

  it('holds defaults within the bounds and among the choices it declares', () => {
    for (const [key, spec] of allSpecs()) {
      const { type } = spec;
      if (spec.default === undefined) continue;
      if (type.kind === 'int' || type.kind === 'number') {
        const value = (spec.default as number) / (spec.scale ?? 1);
        expect(value, key).toBeGreaterThanOrEqual(type.min);
        expect(value, key).toBeLessThanOrEqual(type.max ?? Number.MAX_SAFE_INTEGER);
        if (type.kind === 'int') expect(Number.isInteger(value), key).toBe(true);
      }
      if (type.kind === 'enum') expect(type.choices, key).toContain(spec.default);
      if (type.kind === 'switch') expect(spec.default, key).toBe(false);
    }
  });

  it('names only environment variables env.ts reads', () => {
    const names: string[] = Object.values(ENV_NAMES);
    for (const [key, spec] of allSpecs()) if (spec.env) expect(names, key).toContain(spec.env);
  });
});

describe('the commander options', () => {
  it('of run, enqueue and worker are the table options each accepts, and no other', () => {
    const root = program();
    for (const name of ['run', 'enqueue', 'worker'] as const) {
      const declared = commandOf(root, name).options.map((option) => option.long);
      const expected = optionEntries().flatMap(([, spec]) => {
        if (!accepts(spec, name)) return [];
        const negated = spec.type.kind === 'switch' && spec.type.negatedHelp !== undefined;
        return negated ? [longFlag(spec), `--no-${longFlag(spec)!.slice(2)}`] : [longFlag(spec)];
      });
      expect(declared, name).toEqual(expected);
    }
  });

  it('of the queue commands include the table options they accept', () => {
    const root = program();
    for (const name of ['status', 'finalize', 'resume', 'retry-failed'] as const) {
      const declared = commandOf(root, name).options.map((option) => option.long);
      const expected = optionEntries()
        .filter(([, spec]) => accepts(spec, name))
        .map(([, spec]) => longFlag(spec));
      expect(declared, name).toEqual(expect.arrayContaining(expected));
      expect(expected.length, name).toBeGreaterThan(0);
    }
  });
});

describe('the job schema', () => {
  it('has a field for every option with a job path, and no other (but $schema and description)', () => {
    const schema = z.toJSONSchema(jobFileSchema, { io: 'input' }) as {
      properties: Record<string, { properties?: Record<string, unknown> }>;
    };
    const { $schema, description, ...fields } = schema.properties;
    expect($schema).toBeDefined();
    expect(description).toBeDefined();
    const paths = Object.entries(fields).flatMap(([name, field]) =>
      field.properties ? Object.keys(field.properties).map((leaf) => `${name}.${leaf}`) : [name],
    );
    const expected = optionEntries().flatMap(([, spec]) => (spec.job ? [spec.job] : []));
    expect(paths.sort()).toEqual(expected.sort());
  });

  it('requires what the table requires', () => {
    expect(() => parseJob({ input: {}, model: 'm' }, 'j.json')).toThrow(/input\.path/);
    expect(() => parseJob({ input: { path: 'x' } }, 'j.json')).toThrow(/j\.json: model/);
  });
});

describe('the resolvers', () => {
  const base = { input: 'docs', model: 'm/x' };
  const run = (flags: object, job?: object) =>
    JSON.stringify(
      resolveRunSettings(
        { ...base, ...flags },
        job ? parseJob({ input: { path: 'docs' }, model: 'm/x', ...job }, '/jobs/j.json') : undefined,
        ENV,
      ),
    );
  const worker = (flags: object) =>
    JSON.stringify([resolveWorkerSettings(flags, ENV), queueAddress(flags, ENV)]);

  it('run: every flag of run changes the settings', () => {
    for (const [key, spec] of optionEntries()) {
      if (!accepts(spec, 'run') || READ_BY_ACTIONS.has(key)) continue;
      expect(run({ [key]: sample(spec).flag }), key).not.toBe(run({}));
    }
  });

  it('run: every job-file field changes the settings', () => {
    for (const [key, spec] of optionEntries()) {
      if (spec.job === undefined) continue;
      const [group, leaf] = spec.job.split('.') as [string, string | undefined];
      const value = sample(spec).job;
      const job =
        leaf === undefined
          ? { [group]: value }
          : { [group]: { ...(group === 'input' ? { path: 'docs' } : {}), [leaf]: value } };
      expect(run({ input: undefined, model: undefined }, job), key).not.toBe(
        run({ input: undefined, model: undefined }, {}),
      );
    }
  });

  it('worker: every flag of worker changes its settings or its queue address', () => {
    for (const [key, spec] of optionEntries()) {
      if (!accepts(spec, 'worker')) continue;
      expect(worker({ [key]: sample(spec).flag }), key).not.toBe(worker({}));
    }
  });

  it('enqueue: every flag is read by the run resolver, the queue address or the action', () => {
    for (const [key, spec] of optionEntries()) {
      if (!accepts(spec, 'enqueue')) continue;
      const covered = accepts(spec, 'run') || accepts(spec, 'resume') || READ_BY_ACTIONS.has(key);
      expect(covered, key).toBe(true);
    }
    for (const key of READ_BY_ACTIONS) expect((OPTIONS[key] as OptionSpec).flag, key).toBeDefined();
  });
});
