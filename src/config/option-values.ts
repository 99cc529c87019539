/**
 * Reads options by the table's one rule: a flag overrides the job file, which overrides the
 * environment, which overrides the default. A flag is checked against the table's bound here too:
 * commander checks the command line with the same bound, this checks what library callers pass.
 * Job files were checked by their zod schema, built from the same table.
 */
import { resolve } from 'node:path';
import { ConfigError } from '../errors.js';
import type { Environment } from './env.js';
import type { JobFile, Resolved } from './option-types.js';
import { type EnvName, longFlag, OPTIONS, type OptionName, type OptionSpec } from './options-table.js';

/** The field of `Environment` (env.ts) that holds each variable the table names. */
const ENV_FIELD = {
  EMBEDPIPE_BASE_URL: 'baseUrl',
  REDIS_URL: 'redisUrl',
} as const satisfies Record<EnvName, keyof Environment>;

/** Where a value came from, as an error names it: the flag, the job file's field, the variable. */
export interface Picked<K extends OptionName> {
  readonly value: Resolved<K>;
  readonly field: string;
}

export interface OptionValues {
  /** The flag's value, checked and in the setting's unit; undefined when not given. */
  flag<K extends OptionName>(key: K): Exclude<Resolved<K>, undefined> | undefined;
  /** The job file's value; undefined when it has none. */
  job<K extends OptionName>(key: K): Exclude<Resolved<K>, undefined> | undefined;
  /** The flag's, the job file's and the environment's value, each undefined when unset (base-url.ts). */
  bySource<K extends OptionName>(
    key: K,
  ): {
    flag?: Exclude<Resolved<K>, undefined>;
    job?: Exclude<Resolved<K>, undefined>;
    env?: Exclude<Resolved<K>, undefined>;
  };
  /** The first of flag, job file, environment that is set, else the table's default. */
  get<K extends OptionName>(key: K): Resolved<K>;
  /** As get, with where the value came from ('default' for the default). */
  pick<K extends OptionName>(key: K): Picked<K>;
  /** Checks every flag given, in the table's order: a bad one is reported before anything else. */
  checkFlags(): void;
}

export function optionValues(flags: object, job: JobFile | undefined, env: Environment): OptionValues {
  const given = flags as Partial<Record<OptionName, unknown>>;
  const parsed = new Map<OptionName, unknown>();
  const flag = (key: OptionName): unknown => {
    if (!parsed.has(key)) parsed.set(key, readFlag(OPTIONS[key], given[key]));
    return parsed.get(key);
  };
  const fromJob = (key: OptionName): unknown => {
    const path = (OPTIONS[key] as OptionSpec).job;
    return path === undefined ? undefined : readJob(job, path);
  };
  const fromEnv = (key: OptionName): unknown => {
    const name = (OPTIONS[key] as OptionSpec).env;
    return name === undefined ? undefined : env[ENV_FIELD[name]];
  };
  /** Each source with the name an error gives it, in order of precedence. */
  const sources = (key: OptionName): [string, unknown][] => {
    const spec: OptionSpec = OPTIONS[key];
    return [
      [longFlag(spec) ?? key, flag(key)],
      [spec.job ?? '', fromJob(key)],
      [spec.env ?? '', fromEnv(key)],
    ];
  };
  const pick = <K extends OptionName>(key: K): Picked<K> => {
    const [field, value] = sources(key).find(([, v]) => v !== undefined) ?? [
      'default',
      defaultOf(OPTIONS[key]),
    ];
    return { field, value: value as Resolved<K> };
  };
  return {
    flag: (key) => flag(key) as never,
    job: (key) => fromJob(key) as never,
    bySource: (key) => ({ flag: flag(key), job: fromJob(key), env: fromEnv(key) }) as never,
    get: (key) => pick(key).value,
    pick,
    checkFlags: () => {
      for (const key of Object.keys(OPTIONS) as OptionName[]) flag(key);
    },
  };
}

function defaultOf(spec: OptionSpec): unknown {
  // A path default is relative to the working folder, as a path flag is.
  return spec.type.kind === 'path' && typeof spec.default === 'string' ? resolve(spec.default) : spec.default;
}

function readJob(job: JobFile | undefined, path: string): unknown {
  let value: unknown = job;
  for (const part of path.split('.')) value = (value as Record<string, unknown> | undefined)?.[part];
  return value;
}

/** A flag's value checked against the table: a bad one is a ConfigError naming the flag. */
function readFlag(spec: OptionSpec, value: unknown): unknown {
  if (value === undefined) return undefined;
  const field = longFlag(spec) ?? '';
  const type = spec.type;
  switch (type.kind) {
    case 'int': {
      const max = type.max ?? Number.MAX_SAFE_INTEGER;
      const n = value as number;
      if (!Number.isInteger(n) || n < type.min || n > max) {
        throw new ConfigError(field, `must be an integer from ${type.min} to ${max} (got ${n})`);
      }
      return n * (spec.scale ?? 1);
    }
    case 'number': {
      const n = value as number;
      if (!Number.isFinite(n) || n < type.min || n > type.max) {
        throw new ConfigError(field, `must be a number from ${type.min} to ${type.max} (got ${n})`);
      }
      return n;
    }
    case 'enum':
      if (type.choices.includes(value as string)) return value;
      throw new ConfigError(field, `must be one of ${type.choices.join(', ')} (got "${value}")`);
    case 'path':
      // An empty path is no path: the job file's (or the default) applies.
      return value === '' ? undefined : resolve(value as string);
    case 'list':
      return value === ''
        ? undefined
        : (value as string)
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean);
    case 'language':
      if (!/^[a-z]{2}$/i.test(value as string)) {
        throw new ConfigError(field, `must be a two-letter ISO-639-1 code such as "en" (got "${value}")`);
      }
      return (value as string).toLowerCase();
    case 'provider-options':
      return providerOptions(field, value as string);
    default:
      return value;
  }
}

/** `--stt-provider-options '{"openai": {"prompt": "…"}}'`: an object of objects, one per provider. */
function providerOptions(field: string, text: string): Record<string, Record<string, unknown>> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(field, `is not JSON: ${(error as Error).message}`);
  }
  const isObject = (v: unknown): v is Record<string, unknown> =>
    typeof v === 'object' && v !== null && !Array.isArray(v);
  if (!isObject(value) || !Object.values(value).every(isObject)) {
    throw new ConfigError(
      field,
      'must be a JSON object of options per provider, e.g. {"openai": {"prompt": "Acme, embedpipe"}}',
    );
  }
  return value as Record<string, Record<string, unknown>>;
}
