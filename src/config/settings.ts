/**
 * Resolves the settings of a run (and of a worker): each option is read by the options table's rule
 * (option-values.ts: a flag overrides the job file, which overrides the environment, which overrides
 * the default); what is left here is where each lands in the settings, and the rules that join
 * options. The result is complete and validated; stages never look elsewhere.
 */
import { extname } from 'node:path';
import { ENCODING_EXAMPLES, encodingName } from '../corpus/utf8.js';
import { parseVectorTypes, type VectorForm } from '../embedding/vector-form.js';
import { ConfigError, UsageError } from '../errors.js';
import { parseSwitchRule, type SwitchRule } from '../eval/switch-rule.js';
import type { PerMinute } from '../gateway/rate-pace.js';
import { resolveBaseUrl } from './base-url.js';
import type { Environment } from './env.js';
import type { JobFile, OptionValue, RunFlags, WorkerFlags } from './option-types.js';
import { type OptionValues, optionValues, type Picked } from './option-values.js';

export type { RunFlags, WorkerFlags } from './option-types.js';

export type CorpusFormatSetting = OptionValue<'format'>;

export interface ProviderSettings {
  readonly order?: readonly string[];
  readonly allowFallbacks?: boolean;
  readonly dataCollection?: OptionValue<'dataCollection'>;
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
  readonly outputFormat: OptionValue<'outputFormat'>;
  /** How the vectors are kept: `--dims` (a re-normalised prefix) and `--vector-type` (quantized columns). */
  readonly vectors: VectorForm;
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
  readonly encodingFormat: OptionValue<'encodingFormat'>;
  readonly provider: ProviderSettings;
  readonly retry: {
    readonly maxAttempts: number;
    readonly baseDelayMs: number;
    readonly maxDelayMs: number;
    /** Longest Retry-After waited for (`--max-retry-after`); a longer one fails the batch for a re-run. */
    readonly maxRetryAfterMs: number;
  };
  /** Requests and tokens per minute the user knows the gateway allows (`--rpm`, `--tpm`). */
  readonly rateLimits: PerMinute;
  readonly dryRun: boolean;
  /** Longest an embedded batch waits to be committed with others (what a crash can cost to re-embed). */
  readonly commitIntervalMs: number;
  /** Resident memory (MB) past which garbage is collected at once; 0: no target. */
  readonly memoryTargetMb: number;
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
  /** A vector store synced to the new version after the switch (`--sync-to`, job `sink`). */
  readonly syncTo?: string;
  /** `--switch-if`: the retrieval rule the new version must meet against the current one. */
  readonly switchIf?: SwitchRule;
}

/** The WHATWG name of an encoding label, checked before anything is read; `field` names it in the error. */
function encodingSetting({ field, value: label }: Picked<'encoding'>): string {
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
  const v = optionValues(flags, job, env);
  const input = v.get('input');
  if (!input) throw new UsageError('no input: pass --input PATH or a job file');
  const model = v.get('model');
  if (!model) throw new UsageError('no model: pass --model M or a job file');
  v.checkFlags();
  const format = v.flag('format') ?? jobFormatFor(input, job);
  const imageField = v.get('imageField');
  const audioField = v.get('audioField');
  const maxTokens = v.get('maxTokens');
  const maxCostUsd = v.get('maxCost');
  const syncTo = v.get('syncTo');
  const switchIfText = v.get('switchIf');
  const switchIf = switchIfText === undefined ? undefined : parseSwitchRule(switchIfText);
  const emulator = v.get('emulator');
  const settings: RunSettings = {
    input,
    ...(format ? { format } : {}),
    idField: v.get('idField'),
    textField: v.get('textField'),
    encoding: encodingSetting(v.pick('encoding')),
    ...(imageField !== undefined ? { imageField } : {}),
    maxImageBytes: v.get('maxImageBytes'),
    maxImageBytesPerRequest: v.get('maxImageBytesPerRequest'),
    ...(audioField !== undefined ? { audioField } : {}),
    maxAudioBytes: v.get('maxAudioBytes'),
    transcription: transcriptionSettings(v),
    model,
    outDir: v.get('out'),
    outputFormat: v.get('outputFormat'),
    vectors: vectorForm(v),
    baseUrl: resolveBaseUrl(v.bySource('baseUrl'), { emulator }),
    emulator,
    timeoutMs: v.get('timeoutMs'),
    concurrency: v.get('concurrency'),
    maxInputs: v.get('maxInputs'),
    maxTokensPerRequest: v.get('maxTokensPerRequest'),
    ...(maxTokens !== undefined ? { maxTokens } : {}),
    overlap: v.get('overlap'),
    encodingFormat: v.get('encodingFormat'),
    provider: providerSettings(v),
    retry: {
      maxAttempts: v.get('maxAttempts'),
      maxRetryAfterMs: v.get('maxRetryAfter'),
      baseDelayMs: v.get('retryBaseDelayMs'),
      maxDelayMs: v.get('retryMaxDelayMs'),
    },
    rateLimits: rateLimits(v),
    dryRun: v.get('dryRun'),
    commitIntervalMs: v.get('commitInterval'),
    memoryTargetMb: v.get('memoryTarget'),
    allowInsecureHttp: v.get('allowInsecureHttp'),
    followSymlinks: v.get('followSymlinks'),
    force: v.get('force'),
    ...(maxCostUsd !== undefined ? { maxCostUsd } : {}),
    keepVersions: v.get('keepVersions'),
    ...(syncTo !== undefined ? { syncTo } : {}),
    ...(switchIf !== undefined ? { switchIf } : {}),
  };
  if (settings.maxTokens !== undefined && settings.maxTokens > settings.maxTokensPerRequest) {
    throw new ConfigError('--max-tokens', `is above the per-request budget ${settings.maxTokensPerRequest}`);
  }
  return settings;
}

function vectorForm(v: OptionValues): VectorForm {
  const dims = v.get('dims');
  const { field, value } = v.pick('vectorType');
  return { ...(dims !== undefined ? { dims } : {}), types: parseVectorTypes(value ?? [], field) };
}

function rateLimits(v: OptionValues): PerMinute {
  const requests = v.get('rpm');
  const tokens = v.get('tpm');
  return { ...(requests !== undefined ? { requests } : {}), ...(tokens !== undefined ? { tokens } : {}) };
}

function providerSettings(v: OptionValues): ProviderSettings {
  const order = v.get('providerOrder');
  const allowFallbacks = v.get('allowFallbacks');
  const dataCollection = v.get('dataCollection');
  return {
    ...(order && order.length > 0 ? { order } : {}),
    ...(allowFallbacks !== undefined ? { allowFallbacks } : {}),
    ...(dataCollection ? { dataCollection } : {}),
  };
}

function transcriptionSettings(v: OptionValues): TranscriptionSettings {
  const model = v.get('sttModel');
  const language = v.get('language');
  const temperature = v.get('temperature');
  const providerOptions = v.get('sttProviderOptions');
  const pricePerMinute = v.get('sttPricePerMinute');
  return {
    ...(model !== undefined ? { model } : {}),
    ...(language !== undefined ? { language } : {}),
    ...(temperature !== undefined ? { temperature } : {}),
    ...(providerOptions !== undefined ? { providerOptions } : {}),
    concurrency: v.get('sttConcurrency'),
    ...(pricePerMinute !== undefined ? { pricePerMinute } : {}),
  };
}

/** What `embedpipe worker` runs with: the gateway client's and the queue consumer's settings. */
export interface WorkerSettings {
  readonly baseUrl: string;
  /** Requests in flight in this process (`--concurrency`, as in run and enqueue). */
  readonly concurrency: number;
  /** Queue jobs (batches) taken at once. */
  readonly batchConcurrency: number;
  /** Longest Retry-After waited for inside a job; a longer one leaves the batch to a later attempt. */
  readonly retry: { readonly maxRetryAfterMs: number };
  readonly lockDurationMs: number;
  readonly allowInsecureHttp: boolean;
  readonly metricsPort?: number;
  /** `--rpm`, `--tpm`: the shared budget takes them when this worker is the first to pace. */
  readonly rateLimits: PerMinute;
  /** Resident memory (MB) past which garbage is collected at once; 0: no target. */
  readonly memoryTargetMb: number;
}

export function resolveWorkerSettings(flags: WorkerFlags, env: Environment): WorkerSettings {
  const v = optionValues(flags, undefined, env);
  const baseUrl = resolveBaseUrl(v.bySource('baseUrl'));
  v.checkFlags();
  const concurrency = v.get('concurrency');
  const metricsPort = v.get('metricsPort');
  return {
    baseUrl,
    concurrency,
    // A job is one batch, sent as one request: as many jobs as requests in flight keep the window
    // full, and a job more would only wait for a slot while its lock runs.
    batchConcurrency: concurrency,
    retry: { maxRetryAfterMs: v.get('maxRetryAfter') },
    lockDurationMs: v.get('lockDuration'),
    allowInsecureHttp: v.get('allowInsecureHttp'),
    ...(metricsPort !== undefined ? { metricsPort } : {}),
    rateLimits: rateLimits(v),
    memoryTargetMb: v.get('memoryTarget'),
  };
}
