/**
 * Resolves the settings of a run: a flag overrides the job file, which overrides the environment,
 * which overrides DEFAULTS. The result is complete and validated; stages never look elsewhere.
 */
import { resolve } from 'node:path';
import { ConfigError, UsageError } from '../errors.js';
import { DEFAULTS } from './defaults.js';
import type { Environment } from './env.js';
import type { JobFile } from './job.js';

export type CorpusFormatSetting = 'csv' | 'jsonl' | 'text';

export interface ProviderSettings {
  readonly order?: readonly string[];
  readonly allowFallbacks?: boolean;
  readonly dataCollection?: 'allow' | 'deny';
}

export interface RunSettings {
  readonly input: string;
  readonly format?: CorpusFormatSetting;
  readonly idField: string;
  readonly textField: string;
  readonly model: string;
  readonly outDir: string;
  readonly outputFormat: 'parquet' | 'arrow';
  readonly baseUrl: string;
  /** Start the in-process emulator instead of calling baseUrl (the demo). */
  readonly emulator: boolean;
  readonly timeoutMs: number;
  readonly concurrency: number;
  readonly maxInputs: number;
  readonly maxTokensPerRequest: number;
  /** Per-chunk token budget override; otherwise derived from the model's context_length. */
  readonly maxTokens?: number;
  readonly overlap: number;
  readonly encodingFormat: 'base64' | 'float';
  readonly provider: ProviderSettings;
  readonly retry: { readonly maxAttempts: number; readonly baseDelayMs: number; readonly maxDelayMs: number };
  readonly dryRun: boolean;
  /** Longest an embedded batch waits to be committed with others (what a crash can cost to re-embed). */
  readonly commitIntervalMs: number;
}

/** What `embedpipe run` flags can set (commander's camelCase names). */
export interface RunFlags {
  input?: string;
  format?: string;
  idField?: string;
  textField?: string;
  model?: string;
  out?: string;
  outputFormat?: string;
  baseUrl?: string;
  emulator?: boolean;
  concurrency?: number;
  maxInputs?: number;
  maxTokensPerRequest?: number;
  maxTokens?: number;
  overlap?: number;
  encodingFormat?: string;
  providerOrder?: string;
  allowFallbacks?: boolean;
  dataCollection?: string;
  maxAttempts?: number;
  dryRun?: boolean;
  commitInterval?: number;
}

function oneOf<T extends string>(
  flag: string,
  value: string | undefined,
  allowed: readonly T[],
): T | undefined {
  if (value === undefined) return undefined;
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw new ConfigError(flag, `must be one of ${allowed.join(', ')} (got "${value}")`);
}

function positive(flag: string, value: number | undefined, { min = 1, max = Number.MAX_SAFE_INTEGER } = {}) {
  if (value === undefined) return undefined;
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(flag, `must be an integer from ${min} to ${max} (got ${value})`);
  }
  return value;
}

export function resolveRunSettings(flags: RunFlags, job: JobFile | undefined, env: Environment): RunSettings {
  const input = flags.input ? resolve(flags.input) : job?.input.path;
  if (!input) throw new UsageError('no input: pass --input PATH or a job file');
  const model = flags.model ?? job?.model;
  if (!model) throw new UsageError('no model: pass --model M or a job file');

  const order = flags.providerOrder
    ? flags.providerOrder
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
    : job?.provider?.order;
  const allowFallbacks = flags.allowFallbacks ?? job?.provider?.allowFallbacks;
  const dataCollection =
    oneOf('--data-collection', flags.dataCollection, ['allow', 'deny'] as const) ??
    job?.provider?.dataCollection;
  const provider: ProviderSettings = {
    ...(order && order.length > 0 ? { order } : {}),
    ...(allowFallbacks !== undefined ? { allowFallbacks } : {}),
    ...(dataCollection ? { dataCollection } : {}),
  };

  const format = oneOf('--format', flags.format, ['csv', 'jsonl', 'text'] as const) ?? job?.input.format;
  const maxTokens = positive('--max-tokens', flags.maxTokens) ?? job?.chunking?.maxTokens;
  const settings: RunSettings = {
    input,
    ...(format ? { format } : {}),
    idField: flags.idField ?? job?.input.idField ?? DEFAULTS.idField,
    textField: flags.textField ?? job?.input.textField ?? DEFAULTS.textField,
    model,
    outDir: flags.out ? resolve(flags.out) : (job?.output?.dir ?? resolve(DEFAULTS.outDir)),
    outputFormat:
      oneOf('--output-format', flags.outputFormat, ['parquet', 'arrow'] as const) ??
      job?.output?.format ??
      DEFAULTS.outputFormat,
    baseUrl: flags.baseUrl ?? job?.gateway?.baseUrl ?? env.baseUrl ?? DEFAULTS.baseUrl,
    emulator: flags.emulator ?? job?.gateway?.emulator ?? false,
    timeoutMs: job?.gateway?.timeoutMs ?? DEFAULTS.requestTimeoutMs,
    concurrency:
      positive('--concurrency', flags.concurrency, { max: 1024 }) ?? job?.concurrency ?? DEFAULTS.concurrency,
    maxInputs:
      positive('--max-inputs', flags.maxInputs, { max: 2048 }) ??
      job?.batching?.maxInputs ??
      DEFAULTS.maxInputsPerRequest,
    maxTokensPerRequest:
      positive('--max-tokens-per-request', flags.maxTokensPerRequest) ??
      job?.batching?.maxTokensPerRequest ??
      DEFAULTS.maxTokensPerRequest,
    ...(maxTokens !== undefined ? { maxTokens } : {}),
    overlap:
      positive('--overlap', flags.overlap, { min: 0 }) ?? job?.chunking?.overlap ?? DEFAULTS.overlapTokens,
    encodingFormat:
      oneOf('--encoding-format', flags.encodingFormat, ['base64', 'float'] as const) ??
      job?.encodingFormat ??
      DEFAULTS.encodingFormat,
    provider,
    retry: {
      maxAttempts:
        positive('--max-attempts', flags.maxAttempts, { max: 100 }) ??
        job?.retry?.maxAttempts ??
        DEFAULTS.retry.maxAttempts,
      baseDelayMs: job?.retry?.baseDelayMs ?? DEFAULTS.retry.baseDelayMs,
      maxDelayMs: job?.retry?.maxDelayMs ?? DEFAULTS.retry.maxDelayMs,
    },
    dryRun: flags.dryRun ?? false,
    commitIntervalMs:
      positive('--commit-interval', flags.commitInterval, { min: 0, max: 600_000 }) ??
      DEFAULTS.commit.maxDelayMs,
  };
  if (settings.maxTokens !== undefined && settings.maxTokens > settings.maxTokensPerRequest) {
    throw new ConfigError('--max-tokens', `is above the per-request budget ${settings.maxTokensPerRequest}`);
  }
  return settings;
}
