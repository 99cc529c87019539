/**
 * Resolves the settings of a run: a flag overrides the job file, which overrides the environment,
 * which overrides DEFAULTS. The result is complete and validated; stages never look elsewhere.
 */
import { extname, resolve } from 'node:path';
import { ENCODING_EXAMPLES, encodingName } from '../corpus/utf8.js';
import { ConfigError, UsageError } from '../errors.js';
import { runGatewayBaseUrl } from './base-url.js';
import { DEFAULTS } from './defaults.js';
import type { Environment } from './env.js';
import type { JobFile } from './job.js';

export type CorpusFormatSetting = 'csv' | 'jsonl' | 'text' | 'images' | 'audio';

export interface ProviderSettings {
  readonly order?: readonly string[];
  readonly allowFallbacks?: boolean;
  readonly dataCollection?: 'allow' | 'deny';
}

/** Speech to text, for audio corpora (a folder of audio files, or `--audio-field`). */
export interface TranscriptionSettings {
  /** `<provider>/<model_name>`; an audio corpus without one is refused before anything is sent. */
  readonly model?: string;
  /** ISO-639-1, lower case; absent: the gateway detects it. */
  readonly language?: string;
  readonly temperature?: number;
  /** Provider passthrough, keyed by provider name (`provider.options.<provider>` on the wire). */
  readonly providerOptions?: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  /** Transcription requests in flight. */
  readonly concurrency: number;
  /** USD per minute of audio, for estimates (the gateway publishes no transcription price). */
  readonly pricePerMinute?: number;
}

export interface RunSettings {
  readonly input: string;
  readonly format?: CorpusFormatSetting;
  readonly idField: string;
  readonly textField: string;
  /**
   * WHATWG name of the corpus's text encoding (`--encoding`; 'windows-1252' for latin1): text that
   * is not valid UTF-8 is read in it. Default 'utf-8'.
   */
  readonly encoding: string;
  /** CSV column or JSONL property holding an image (http(s) URL, data URL, or a path relative to the file). */
  readonly imageField?: string;
  /** Largest image in bytes: a larger one is a reject. */
  readonly maxImageBytes: number;
  /** Summed data URL bytes per request of images. */
  readonly maxImageBytesPerRequest: number;
  /** CSV column or JSONL property holding the path of an audio file (relative to the file). */
  readonly audioField?: string;
  /** Largest audio file in bytes: a larger one is a reject. */
  readonly maxAudioBytes: number;
  readonly transcription: TranscriptionSettings;
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
  readonly retry: {
    readonly maxAttempts: number;
    readonly baseDelayMs: number;
    readonly maxDelayMs: number;
    /** Longest Retry-After waited for (`--max-retry-after`); a longer one fails the batch for a re-run. */
    readonly maxRetryAfterMs: number;
  };
  readonly dryRun: boolean;
  /** Longest an embedded batch waits to be committed with others (what a crash can cost to re-embed). */
  readonly commitIntervalMs: number;
  /** Let `baseUrl` be plain http:// to a non-loopback host (the key then travels in clear text). */
  readonly allowInsecureHttp: boolean;
  /** Follow symlinks in a text folder that point outside it. */
  readonly followSymlinks: boolean;
  /** Let a run delete files of another model's or plan's unfinished run in the output folder. */
  readonly force: boolean;
  /** Stop before the run's spending (USD) would pass this; undefined: no cap. */
  readonly maxCostUsd?: number;
  /** Old versions of the same model kept after the switch to a new one. */
  readonly keepVersions: number;
}

/** What `embedpipe run` flags can set (commander's camelCase names). */
export interface RunFlags {
  input?: string;
  format?: string;
  idField?: string;
  textField?: string;
  encoding?: string;
  imageField?: string;
  maxImageBytes?: number;
  maxImageBytesPerRequest?: number;
  audioField?: string;
  maxAudioBytes?: number;
  sttModel?: string;
  language?: string;
  temperature?: number;
  /** JSON: `{"<provider>": {…}}`. */
  sttProviderOptions?: string;
  sttConcurrency?: number;
  /** USD per minute of audio. */
  sttPricePerMinute?: number;
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
  /** Seconds. */
  maxRetryAfter?: number;
  dryRun?: boolean;
  commitInterval?: number;
  allowInsecureHttp?: boolean;
  followSymlinks?: boolean;
  force?: boolean;
  /** USD. */
  maxCost?: number;
  keepVersions?: number;
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

function nonNegative(flag: string, value: number | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!Number.isFinite(value) || value < 0) {
    throw new ConfigError(flag, `must be a number of at least 0 (got ${value})`);
  }
  return value;
}

/** The WHATWG name of an encoding label, checked before anything is read; `field` names it in the error. */
function encodingSetting(field: string, label: string | undefined): string | undefined {
  if (label === undefined) return undefined;
  const name = encodingName(label);
  if (name === undefined)
    throw new ConfigError(field, `unknown encoding "${label}": use ${ENCODING_EXAMPLES}`);
  return name;
}

/** The job file at `path`, if one is given; zod and the job schema load only then. */
export async function readJobFile(path: string | undefined): Promise<JobFile | undefined> {
  return path ? (await import('./job.js')).loadJobFile(path) : undefined;
}

/**
 * The job file's input format, when it still applies to `input`: an --input that replaces the job's
 * input keeps the job's format only if it has the same extension (a folder for a folder); otherwise
 * the format is inferred again from the new input, so `run job.json --input docs.csv` never reads a
 * CSV file as the job's text.
 */
function jobFormatFor(input: string, job: JobFile | undefined): CorpusFormatSetting | undefined {
  const format = job?.input.format;
  if (!format || input === job.input.path) return format;
  return extname(input).toLowerCase() === extname(job.input.path).toLowerCase() ? format : undefined;
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

  const format =
    oneOf('--format', flags.format, ['csv', 'jsonl', 'text', 'images', 'audio'] as const) ??
    jobFormatFor(input, job);
  const imageField = flags.imageField ?? job?.input.imageField;
  const audioField = flags.audioField ?? job?.input.audioField;
  const maxTokens = positive('--max-tokens', flags.maxTokens) ?? job?.chunking?.maxTokens;
  const maxCostUsd = nonNegative('--max-cost', flags.maxCost) ?? job?.maxCostUsd;
  const settings: RunSettings = {
    input,
    ...(format ? { format } : {}),
    idField: flags.idField ?? job?.input.idField ?? DEFAULTS.idField,
    textField: flags.textField ?? job?.input.textField ?? DEFAULTS.textField,
    encoding:
      encodingSetting('--encoding', flags.encoding) ??
      encodingSetting('input.encoding', job?.input.encoding) ??
      DEFAULTS.encoding,
    ...(imageField !== undefined ? { imageField } : {}),
    maxImageBytes:
      positive('--max-image-bytes', flags.maxImageBytes) ??
      job?.input.maxImageBytes ??
      DEFAULTS.images.maxBytes,
    maxImageBytesPerRequest:
      positive('--max-image-bytes-per-request', flags.maxImageBytesPerRequest) ??
      job?.batching?.maxImageBytesPerRequest ??
      DEFAULTS.images.maxBytesPerRequest,
    ...(audioField !== undefined ? { audioField } : {}),
    maxAudioBytes:
      positive('--max-audio-bytes', flags.maxAudioBytes) ??
      job?.input.maxAudioBytes ??
      DEFAULTS.audio.maxBytes,
    transcription: transcriptionSettings(flags, job),
    model,
    outDir: flags.out ? resolve(flags.out) : (job?.output?.dir ?? resolve(DEFAULTS.outDir)),
    outputFormat:
      oneOf('--output-format', flags.outputFormat, ['parquet', 'arrow'] as const) ??
      job?.output?.format ??
      DEFAULTS.outputFormat,
    baseUrl: runGatewayBaseUrl(
      flags.emulator ?? job?.gateway?.emulator ?? false,
      flags.baseUrl,
      job?.gateway?.baseUrl,
      env.baseUrl,
    ),
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
      maxRetryAfterMs:
        flags.maxRetryAfter === undefined
          ? DEFAULTS.retry.maxRetryAfterMs
          : (positive('--max-retry-after', flags.maxRetryAfter, { min: 0, max: 86_400 }) ?? 0) * 1000,
      baseDelayMs: job?.retry?.baseDelayMs ?? DEFAULTS.retry.baseDelayMs,
      maxDelayMs: job?.retry?.maxDelayMs ?? DEFAULTS.retry.maxDelayMs,
    },
    dryRun: flags.dryRun ?? false,
    commitIntervalMs:
      positive('--commit-interval', flags.commitInterval, { min: 0, max: 600_000 }) ??
      DEFAULTS.commit.maxDelayMs,
    allowInsecureHttp: flags.allowInsecureHttp ?? job?.gateway?.allowInsecureHttp ?? false,
    followSymlinks: flags.followSymlinks ?? job?.input.followSymlinks ?? false,
    force: flags.force ?? false,
    ...(maxCostUsd !== undefined ? { maxCostUsd } : {}),
    keepVersions:
      positive('--keep-versions', flags.keepVersions, { min: 0, max: 1000 }) ??
      job?.output?.keepVersions ??
      DEFAULTS.keepVersions,
  };
  if (settings.maxTokens !== undefined && settings.maxTokens > settings.maxTokensPerRequest) {
    throw new ConfigError('--max-tokens', `is above the per-request budget ${settings.maxTokensPerRequest}`);
  }
  return settings;
}

function transcriptionSettings(flags: RunFlags, job: JobFile | undefined): TranscriptionSettings {
  const fromJob = job?.transcription;
  const model = flags.sttModel ?? fromJob?.model;
  if (flags.language !== undefined && !/^[a-z]{2}$/i.test(flags.language)) {
    throw new ConfigError(
      '--language',
      `must be a two-letter ISO-639-1 code such as "en" (got "${flags.language}")`,
    );
  }
  const language = flags.language?.toLowerCase() ?? fromJob?.language;
  if (flags.temperature !== undefined && !(flags.temperature >= 0 && flags.temperature <= 2)) {
    throw new ConfigError('--temperature', `must be a number from 0 to 2 (got ${flags.temperature})`);
  }
  const temperature = flags.temperature ?? fromJob?.temperature;
  const providerOptions =
    flags.sttProviderOptions !== undefined
      ? parseProviderOptions(flags.sttProviderOptions)
      : fromJob?.providerOptions;
  const pricePerMinute =
    nonNegative('--stt-price-per-minute', flags.sttPricePerMinute) ?? fromJob?.pricePerMinute;
  return {
    ...(model !== undefined ? { model } : {}),
    ...(language !== undefined ? { language } : {}),
    ...(temperature !== undefined ? { temperature } : {}),
    ...(providerOptions !== undefined ? { providerOptions } : {}),
    concurrency:
      positive('--stt-concurrency', flags.sttConcurrency, { max: 256 }) ??
      fromJob?.concurrency ??
      DEFAULTS.audio.concurrency,
    ...(pricePerMinute !== undefined ? { pricePerMinute } : {}),
  };
}

/** `--stt-provider-options '{"openai": {"prompt": "…"}}'`: an object of objects, one per provider. */
function parseProviderOptions(text: string): Record<string, Record<string, unknown>> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new ConfigError('--stt-provider-options', `is not JSON: ${(error as Error).message}`);
  }
  const isObject = (v: unknown): v is Record<string, unknown> =>
    typeof v === 'object' && v !== null && !Array.isArray(v);
  if (!isObject(value) || !Object.values(value).every(isObject)) {
    throw new ConfigError(
      '--stt-provider-options',
      'must be a JSON object of options per provider, e.g. {"openai": {"prompt": "Acme, embedpipe"}}',
    );
  }
  return value as Record<string, Record<string, unknown>>;
}
