/**
 * Every option of `run`, `enqueue` and `worker` (and the queue options of the distributed commands),
 * once: its flag, job-file field, environment variable, default, bound and help. Derived from it:
 * the commander options (src/cli/table-options.ts), the zod job schema (job.ts) and so
 * jobs/job.schema.json, the resolver (option-values.ts, settings.ts) and the options reference of
 * docs/commands.md (options-doc.ts). Plain constants: `--help` loads this file, so it imports
 * nothing but the defaults (test/cli/startup.test.ts).
 */
import { DEFAULTS } from './defaults.js';

export type CommandName = 'run' | 'enqueue' | 'worker' | 'status' | 'finalize' | 'resume' | 'retry-failed';

/** How a value is read and bounded. */
export type OptionType =
  | { readonly kind: 'int'; readonly min: number; readonly max?: number }
  | { readonly kind: 'number'; readonly min: number; readonly max: number }
  | { readonly kind: 'enum'; readonly choices: readonly string[] }
  /** Non-empty text. */
  | { readonly kind: 'text' }
  /** A file or folder: relative to the working folder (flag) or to the job file. */
  | { readonly kind: 'path' }
  | { readonly kind: 'url' }
  /** A flag without a value; `negatedHelp`: `--no-<flag>` sets it false. */
  | { readonly kind: 'switch'; readonly negatedHelp?: string }
  /** `a,b` on the command line, an array in a job file. */
  | { readonly kind: 'list' }
  /** `{"<provider>": {…}}`: JSON text on the command line, an object in a job file. */
  | { readonly kind: 'provider-options' }
  /** A text encoding label (settings.ts turns it into its WHATWG name). */
  | { readonly kind: 'encoding' }
  /** A two-letter ISO-639-1 code. */
  | { readonly kind: 'language' };

export type EnvName = 'EMBEDPIPE_BASE_URL' | 'REDIS_URL';

export interface OptionSpec {
  /** Commander's flag with its value name, e.g. '--max-inputs <n>'; none: job file only. */
  readonly flag?: string;
  /** What it does; never its default (generated from `default`, `defaultNote` or `env`). */
  readonly help: string;
  readonly type: OptionType;
  /** The commands that accept the flag (job-file options: the commands that read job files). */
  readonly commands: readonly CommandName[];
  /** Dotted path in a job file, e.g. 'batching.maxInputs'. */
  readonly job?: string;
  /** The job file must set it. */
  readonly required?: true;
  /** The environment variable read when neither a flag nor the job file sets it. */
  readonly env?: EnvName;
  /** The value when nothing sets it, in the setting's unit (see `scale`). */
  readonly default?: number | string | boolean;
  /** What applies when nothing sets it, where that is not one value. */
  readonly defaultNote?: string;
  /** The setting is the flag's value times this (seconds on the command line, ms in the settings). */
  readonly scale?: number;
}

const int = (min: number, max?: number) =>
  ({ kind: 'int', min, ...(max !== undefined ? { max } : {}) }) as const;
const number = (min: number, max: number) => ({ kind: 'number', min, max }) as const;
const oneOf = <const C extends readonly string[]>(choices: C) => ({ kind: 'enum', choices }) as const;
const TEXT = { kind: 'text' } as const;
const PATH = { kind: 'path' } as const;
const SWITCH = { kind: 'switch' } as const;

/** The corpus and planning options: `run` and `enqueue`, which also read job files. */
const CORPUS = ['run', 'enqueue'] as const;
/** The commands that call the gateway with a key. */
const CLIENTS = ['run', 'enqueue', 'worker'] as const;
const QUEUE = ['enqueue', 'worker', 'status', 'finalize', 'resume', 'retry-failed'] as const;

const SECOND = 1000;
/** The chunk budget with no --max-tokens and no context_length listed (chunking/budget.ts). */
const FALLBACK_CHUNK_TOKENS = Math.floor(DEFAULTS.fallbackContextLength * (1 - DEFAULTS.contextSafetyMargin));

/**
 * Keys are commander's attribute names of the flags (`--max-inputs` → maxInputs), so parsed flags
 * index this table; job-only options are named after their setting. The order is the help's.
 */
export const OPTIONS = {
  input: {
    flag: '--input <path>',
    help: 'CSV, JSONL, a folder of .txt/.md files, of images, or of audio files',
    type: PATH,
    commands: CORPUS,
    job: 'input.path',
    required: true,
  },
  format: {
    flag: '--format <format>',
    help: 'corpus format',
    type: oneOf(['csv', 'jsonl', 'text', 'images', 'audio']),
    commands: CORPUS,
    job: 'input.format',
    defaultNote: 'from the extension; a folder holding images: images, audio files: audio',
  },
  idField: {
    flag: '--id-field <name>',
    help: 'id column or key',
    type: TEXT,
    commands: CORPUS,
    job: 'input.idField',
    default: DEFAULTS.idField,
  },
  textField: {
    flag: '--text-field <name>',
    help: 'text column or key; with an image, its caption',
    type: TEXT,
    commands: CORPUS,
    job: 'input.textField',
    default: DEFAULTS.textField,
  },
  encoding: {
    flag: '--encoding <name>',
    help: 'encoding of text that is not UTF-8: windows-1252 (latin1), iso-8859-15, utf-16le (text files only)…',
    type: { kind: 'encoding' },
    commands: CORPUS,
    job: 'input.encoding',
    default: DEFAULTS.encoding,
  },
  imageField: {
    flag: '--image-field <name>',
    help: 'CSV/JSONL column or key holding an image: http(s) URL, data URL, or a path relative to the file',
    type: TEXT,
    commands: CORPUS,
    job: 'input.imageField',
  },
  maxImageBytes: {
    flag: '--max-image-bytes <n>',
    help: 'largest image; a larger one is a reject',
    type: int(1),
    commands: CORPUS,
    job: 'input.maxImageBytes',
    default: DEFAULTS.images.maxBytes,
  },
  maxImageBytesPerRequest: {
    flag: '--max-image-bytes-per-request <n>',
    help: 'summed image data URL bytes per request',
    type: int(1),
    commands: CORPUS,
    job: 'batching.maxImageBytesPerRequest',
    default: DEFAULTS.images.maxBytesPerRequest,
  },
  audioField: {
    flag: '--audio-field <name>',
    help: 'CSV/JSONL column or key holding the path of an audio file (relative to the file): transcribed, then embedded',
    type: TEXT,
    commands: CORPUS,
    job: 'input.audioField',
  },
  maxAudioBytes: {
    flag: '--max-audio-bytes <n>',
    help: 'largest audio file; a larger one is a reject',
    type: int(1),
    commands: CORPUS,
    job: 'input.maxAudioBytes',
    default: DEFAULTS.audio.maxBytes,
  },
  sttModel: {
    flag: '--stt-model <model>',
    help: 'speech-to-text model for audio, <provider>/<model_name> (required for audio)',
    type: TEXT,
    commands: CORPUS,
    job: 'transcription.model',
  },
  language: {
    flag: '--language <code>',
    help: 'audio: ISO-639-1 language code',
    type: { kind: 'language' },
    commands: CORPUS,
    job: 'transcription.language',
    defaultNote: 'detected by the gateway',
  },
  temperature: {
    flag: '--temperature <t>',
    help: 'audio: sampling temperature',
    type: number(0, 2),
    commands: CORPUS,
    job: 'transcription.temperature',
  },
  sttProviderOptions: {
    flag: '--stt-provider-options <json>',
    help: 'audio: provider passthrough, e.g. \'{"openai":{"prompt":"…"}}\'',
    type: { kind: 'provider-options' },
    commands: CORPUS,
    job: 'transcription.providerOptions',
  },
  sttConcurrency: {
    flag: '--stt-concurrency <n>',
    help: "transcription requests in flight (within --concurrency's window)",
    type: int(1, 256),
    commands: CORPUS,
    job: 'transcription.concurrency',
    default: DEFAULTS.audio.concurrency,
  },
  sttPricePerMinute: {
    flag: '--stt-price-per-minute <usd>',
    help: 'audio: USD per minute, for --dry-run estimates',
    type: number(0, 1e6),
    commands: CORPUS,
    job: 'transcription.pricePerMinute',
    defaultNote: 'what this dataset was billed',
  },
  model: {
    flag: '--model <model>',
    help: 'embedding model, <provider>/<model_name>',
    type: TEXT,
    commands: CORPUS,
    job: 'model',
    required: true,
  },
  out: {
    flag: '--out <dir>',
    help: 'output folder',
    type: PATH,
    commands: CORPUS,
    job: 'output.dir',
    default: DEFAULTS.outDir,
  },
  outputFormat: {
    flag: '--output-format <format>',
    help: 'dataset file format',
    type: oneOf(['parquet', 'arrow']),
    commands: CORPUS,
    job: 'output.format',
    default: DEFAULTS.outputFormat,
  },
  dims: {
    flag: '--dims <n>',
    help: "keep each vector's first N dimensions, re-normalised (for models trained for it, e.g. Matryoshka)",
    type: int(1, 65_536),
    commands: CORPUS,
    job: 'output.dims',
    defaultNote: 'all the model returns',
  },
  vectorType: {
    flag: '--vector-type <a,b>',
    help: 'quantized vector columns written beside the float32 embedding: float16, int8, binary',
    type: { kind: 'list' },
    commands: CORPUS,
    job: 'output.vectorTypes',
    defaultNote: 'none',
  },
  baseUrl: {
    flag: '--base-url <url>',
    help: 'gateway base URL, ending in /v1',
    type: { kind: 'url' },
    commands: CLIENTS,
    job: 'gateway.baseUrl',
    env: 'EMBEDPIPE_BASE_URL',
  },
  emulator: {
    flag: '--emulator',
    help: 'start the local gateway emulator in-process and use it',
    type: SWITCH,
    commands: CORPUS,
    job: 'gateway.emulator',
    default: false,
  },
  timeoutMs: {
    help: 'per-request timeout of gateway calls, in ms',
    type: int(1),
    commands: CORPUS,
    job: 'gateway.timeoutMs',
    default: DEFAULTS.requestTimeoutMs,
  },
  concurrency: {
    flag: '--concurrency <n>',
    help: 'requests in flight in this process (a worker also takes as many batches from the queue at once)',
    type: int(1, 1024),
    commands: CLIENTS,
    job: 'concurrency',
    default: DEFAULTS.concurrency,
  },
  maxInputs: {
    flag: '--max-inputs <n>',
    help: 'inputs per request',
    type: int(1, 2048),
    commands: CORPUS,
    job: 'batching.maxInputs',
    default: DEFAULTS.maxInputsPerRequest,
  },
  maxTokensPerRequest: {
    flag: '--max-tokens-per-request <n>',
    help: 'summed tokens per request',
    type: int(1),
    commands: CORPUS,
    job: 'batching.maxTokensPerRequest',
    default: DEFAULTS.maxTokensPerRequest,
  },
  maxTokens: {
    flag: '--max-tokens <n>',
    help: 'gateway tokens per chunk, at most --max-tokens-per-request',
    type: int(1),
    commands: CORPUS,
    job: 'chunking.maxTokens',
    defaultNote: `the model's context length less ${DEFAULTS.contextSafetyMargin * 100}%, or ${FALLBACK_CHUNK_TOKENS} when it lists none`,
  },
  overlap: {
    flag: '--overlap <n>',
    help: 'gateway tokens shared by consecutive chunks',
    type: int(0),
    commands: CORPUS,
    job: 'chunking.overlap',
    default: DEFAULTS.overlapTokens,
  },
  encodingFormat: {
    flag: '--encoding-format <format>',
    help: 'how the gateway sends the vectors',
    type: oneOf(['base64', 'float']),
    commands: CORPUS,
    job: 'encodingFormat',
    default: DEFAULTS.encodingFormat,
  },
  providerOrder: {
    flag: '--provider-order <a,b>',
    help: 'providers in order of preference',
    type: { kind: 'list' },
    commands: CORPUS,
    job: 'provider.order',
  },
  allowFallbacks: {
    flag: '--allow-fallbacks',
    help: 'let the gateway use backup providers',
    type: { kind: 'switch', negatedHelp: 'never let the gateway use backup providers' },
    commands: CORPUS,
    job: 'provider.allowFallbacks',
  },
  dataCollection: {
    flag: '--data-collection <policy>',
    help: 'deny: only providers that do not collect data',
    type: oneOf(['allow', 'deny']),
    commands: CORPUS,
    job: 'provider.dataCollection',
  },
  maxAttempts: {
    flag: '--max-attempts <n>',
    help: 'HTTP attempts per request',
    type: int(1, 100),
    commands: CORPUS,
    job: 'retry.maxAttempts',
    default: DEFAULTS.retry.maxAttempts,
  },
  retryBaseDelayMs: {
    help: 'wait before the first HTTP retry, in ms, doubling with each attempt',
    type: int(1),
    commands: CORPUS,
    job: 'retry.baseDelayMs',
    default: DEFAULTS.retry.baseDelayMs,
  },
  retryMaxDelayMs: {
    help: 'longest wait between HTTP retries, in ms',
    type: int(1),
    commands: CORPUS,
    job: 'retry.maxDelayMs',
    default: DEFAULTS.retry.maxDelayMs,
  },
  maxRetryAfter: {
    flag: '--max-retry-after <seconds>',
    help: 'longest Retry-After waited for; a longer one fails the batch, left for a re-run (worker: for a later queue attempt)',
    type: int(0, 86_400),
    commands: CLIENTS,
    default: DEFAULTS.retry.maxRetryAfterMs,
    scale: SECOND,
  },
  rpm: {
    flag: '--rpm <n>',
    help: 'requests per minute the gateway allows the key: paced to from the first request (unset: read from x-ratelimit-* headers, or learned from 429s)',
    type: int(1),
    commands: CLIENTS,
    job: 'gateway.rpm',
  },
  tpm: {
    flag: '--tpm <n>',
    help: 'tokens per minute the gateway allows the key: each request is paced by the tokens it will be billed (unset: read from headers, or learned)',
    type: int(1),
    commands: CLIENTS,
    job: 'gateway.tpm',
  },
  commitInterval: {
    flag: '--commit-interval <ms>',
    help: 'longest an embedded batch waits to be committed with others',
    type: int(0, 600_000),
    commands: CORPUS,
    default: DEFAULTS.commit.maxDelayMs,
  },
  allowInsecureHttp: {
    flag: '--allow-insecure-http',
    help: 'allow a plain http:// --base-url to a non-loopback host (key in clear text)',
    type: SWITCH,
    commands: CLIENTS,
    job: 'gateway.allowInsecureHttp',
    default: false,
  },
  followSymlinks: {
    flag: '--follow-symlinks',
    help: 'follow symlinks in a text folder that point outside it',
    type: SWITCH,
    commands: CORPUS,
    job: 'input.followSymlinks',
    default: false,
  },
  force: {
    flag: '--force',
    help: "delete another model's or plan's unfinished files in --out",
    type: SWITCH,
    commands: CORPUS,
    default: false,
  },
  maxCost: {
    flag: '--max-cost <usd>',
    help: 'stop before the run would spend more than this (USD); a re-run resumes',
    type: number(0, 1e9),
    commands: CORPUS,
    job: 'maxCostUsd',
  },
  keepVersions: {
    flag: '--keep-versions <n>',
    help: 'old versions of the dataset kept after the switch to the new one',
    type: int(0, 1000),
    commands: CORPUS,
    job: 'output.keepVersions',
    default: DEFAULTS.keepVersions,
  },
  syncTo: {
    flag: '--sync-to <url>',
    help: 'after the switch, bring this vector store to the new version (as embedpipe sync): postgres://…?table=… or lancedb:///…?table=…',
    type: TEXT,
    commands: ['run'],
    job: 'sink',
  },
  switchIf: {
    flag: '--switch-if <rule>',
    help: 'switch to the new version only if eval against the current one meets the rule, e.g. "ndcg@10 >= current - 0.01" (else it stays built: exit 13)',
    type: TEXT,
    commands: ['run'],
    job: 'switchIf',
  },
  dryRun: {
    flag: '--dry-run',
    help: 'plan and count tokens and cost; call no embeddings',
    type: SWITCH,
    commands: ['run'],
    default: false,
  },
  redis: {
    flag: '--redis <url>',
    help: 'Redis URL',
    type: TEXT,
    commands: QUEUE,
    env: 'REDIS_URL',
  },
  queue: {
    flag: '--queue <name>',
    help: 'queue name',
    type: TEXT,
    commands: QUEUE,
    default: DEFAULTS.distributed.queue,
  },
  prefix: {
    flag: '--prefix <prefix>',
    help: 'Redis key prefix',
    type: TEXT,
    commands: QUEUE,
    default: DEFAULTS.distributed.prefix,
  },
  highWater: {
    flag: '--high-water <n>',
    help: 'wait while more jobs than this wait in the queue',
    type: int(1),
    commands: ['enqueue'],
    default: DEFAULTS.distributed.highWater,
  },
  redisWait: {
    flag: '--redis-wait <seconds>',
    help: 'ride out a Redis outage this long before stopping with exit 10',
    type: int(1),
    commands: ['enqueue'],
    default: DEFAULTS.distributed.redisOutageMs,
    scale: SECOND,
  },
  metricsPort: {
    flag: '--metrics-port <port>',
    help: 'serve Prometheus metrics on this port at /metrics',
    type: int(0, 65_535),
    commands: ['worker'],
  },
  lockDuration: {
    flag: '--lock-duration <seconds>',
    help: 'how long a job stays locked to a worker that stopped answering (killed): its jobs go back to the queue after about two to three times this',
    type: int(1, 3600),
    commands: ['worker'],
    default: DEFAULTS.distributed.lockDurationMs,
    scale: SECOND,
  },
  json: {
    flag: '--json',
    help: 'print the summary as JSON on stdout',
    type: SWITCH,
    commands: CORPUS,
  },
} as const satisfies Record<string, OptionSpec>;

export type OptionName = keyof typeof OPTIONS;

/** The table's entries, typed as specs, in order. */
export function optionEntries(): [OptionName, OptionSpec][] {
  return Object.entries(OPTIONS) as [OptionName, OptionSpec][];
}

/** `--max-inputs` of '--max-inputs <n>': the name errors and help use. */
export function longFlag(spec: OptionSpec): string | undefined {
  return spec.flag?.split(' ')[0];
}

/** The bound, as help says it: ', 1 to 1024' (nothing without an upper bound). */
function rangeText(type: OptionType): string {
  return (type.kind === 'int' || type.kind === 'number') && type.max !== undefined
    ? `, ${type.min} to ${type.max}`
    : '';
}

/** What applies when nothing sets the option, as help shows it; undefined: help shows none. */
export function defaultText(spec: OptionSpec): string | undefined {
  if (spec.type.kind === 'switch') return undefined; // off unless given: nothing to say
  if (spec.defaultNote !== undefined) return spec.defaultNote;
  if (spec.env !== undefined) return `$${spec.env}`;
  if (spec.default === undefined) return undefined;
  return typeof spec.default === 'number' ? String(spec.default / (spec.scale ?? 1)) : String(spec.default);
}

/** The help of an option: choices, what it does, bound, and its default from the table. */
export function describeOption(spec: OptionSpec): string {
  const choices = spec.type.kind === 'enum' ? spec.type.choices.join(' | ') : '';
  const text = [choices, spec.help].filter(Boolean).join('; ') + rangeText(spec.type);
  const shown = defaultText(spec);
  return shown === undefined ? text : `${text} (default: ${shown})`;
}
