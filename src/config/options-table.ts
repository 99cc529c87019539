/**
 * Every option of every command, once: its flag, job-file field, environment variable, default,
 * bound and help. OPTIONS holds those of `run`, `enqueue` and `worker` (and the queue options of the
 * distributed commands); OWN_OPTIONS those each other command declares for itself. Derived from
 * them: the commander options of every command (src/cli/table-options.ts), so every default its
 * help shows; and from OPTIONS the zod job schema (job.ts) and so jobs/job.schema.json, the resolver
 * (option-values.ts, settings.ts) and the options reference of docs/commands.md (options-doc.ts).
 * Plain constants: `--help` loads this file, so it imports nothing but the defaults
 * (test/cli/startup.test.ts).
 */
import { DEFAULTS } from './defaults.js';

export type CommandName =
  | 'run'
  | 'enqueue'
  | 'worker'
  | 'status'
  | 'finalize'
  | 'resume'
  | 'retry-failed'
  | 'datasets'
  | 'verify'
  | 'sync'
  | 'search'
  | 'eval'
  | 'models'
  | 'members'
  | 'transcribe'
  | 'embed'
  | 'gateway';

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

/** What commander and help make of an option: the table's options and the commands' own alike. */
export interface FlagSpec {
  /** Commander's flag with its value name, e.g. '--max-inputs <n>'; none: job file only. */
  readonly flag?: string;
  /** What it does; never its default (generated from `default`, `defaultNote` or `env`). */
  readonly help: string;
  readonly type: OptionType;
  /** The environment variable read when neither a flag nor the job file sets it. */
  readonly env?: EnvName;
  /** The value when nothing sets it, in the setting's unit (see `scale`). */
  readonly default?: number | string | boolean;
  /** What applies when nothing sets it, where that is not one value. */
  readonly defaultNote?: string;
  /** The setting is the flag's value times this (seconds on the command line, ms in the settings). */
  readonly scale?: number;
}

/** An option of OPTIONS: shared by the commands it names, and settable in a job file. */
export interface OptionSpec extends FlagSpec {
  /** The commands that accept the flag (job-file options: the commands that read job files). */
  readonly commands: readonly CommandName[];
  /** Dotted path in a job file, e.g. 'batching.maxInputs'. */
  readonly job?: string;
  /** The job file must set it. */
  readonly required?: true;
}

/** An option one command declares for itself (OWN_OPTIONS): a flag only, read by its action. */
export interface OwnOptionSpec extends FlagSpec {
  readonly flag: string;
  /** The command refuses to run without it (commander's required option). */
  readonly mandatory?: true;
}

const int = (min: number, max?: number) =>
  ({ kind: 'int', min, ...(max !== undefined ? { max } : {}) }) as const;
const number = (min: number, max: number) => ({ kind: 'number', min, max }) as const;
const oneOf = <const C extends readonly string[]>(choices: C) => ({ kind: 'enum', choices }) as const;
const TEXT = { kind: 'text' } as const;
const PATH = { kind: 'path' } as const;
const SWITCH = { kind: 'switch' } as const;
const URL_TYPE = { kind: 'url' } as const;
/** Sampling temperature of speech-to-text (run's audio, transcribe). */
const TEMPERATURE = number(0, 2);
/** A cost cap in USD. */
const USD = number(0, 1e9);

/** The flags every command that calls the gateway shares (config/base-url.ts resolves the URL). */
const BASE_URL = {
  flag: '--base-url <url>',
  help: 'gateway base URL, ending in /v1',
  type: URL_TYPE,
  env: 'EMBEDPIPE_BASE_URL',
} as const;
const ALLOW_INSECURE_HTTP = {
  flag: '--allow-insecure-http',
  help: 'allow a plain http:// --base-url to a non-loopback host (key in clear text)',
  type: SWITCH,
} as const;
const EMBEDDING_MODEL = {
  flag: '--model <model>',
  help: 'embedding model, <provider>/<model_name>',
  type: TEXT,
} as const;
const JSON_FOR_SCRIPTS = { flag: '--json', help: 'print JSON for scripts', type: SWITCH } as const;

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
    type: TEMPERATURE,
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
    ...EMBEDDING_MODEL,
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
    ...BASE_URL,
    commands: CLIENTS,
    job: 'gateway.baseUrl',
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
  memoryTarget: {
    flag: '--memory-target <MB>',
    help: 'resident memory past which garbage is collected at once (at most once a second, 2% of the time) and the heap kept within 1.3× what survives; 0: when V8 chooses',
    type: int(0, 1_000_000),
    commands: CLIENTS,
    default: DEFAULTS.memoryTarget.mb,
  },
  allowInsecureHttp: {
    ...ALLOW_INSECURE_HTTP,
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
    type: USD,
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

/** The commands that call the gateway with a key but read no job file: they embed or list a few things. */
const GATEWAY_TOOL = { baseUrl: BASE_URL, allowInsecureHttp: ALLOW_INSECURE_HTTP } as const;
/** `--emulator` of a command that embeds a query or a few rows (the dataset was made with --emulator). */
const queryEmulator = (help: string) => ({ flag: '--emulator', help, type: SWITCH }) as const;

/**
 * The options each command declares for itself, beside those it takes from OPTIONS: every option of
 * the commands that read no job file, and the few a queue command adds. Keyed, as OPTIONS, by
 * commander's attribute names; the order is the help's. Their actions read the flags as given and
 * take the defaults shown here from DEFAULTS.
 */
export const OWN_OPTIONS = {
  status: { json: JSON_FOR_SCRIPTS },
  finalize: {
    // Only recorded in the manifest: finalize calls no gateway (config/base-url.ts, `optional`).
    baseUrl: { ...BASE_URL, help: 'gateway base URL recorded in the manifest' },
    json: JSON_FOR_SCRIPTS,
  },
  datasets: {
    switch: {
      flag: '--switch <version>',
      help: 'make a complete version current again (roll back), e.g. v000002',
      type: TEXT,
    },
    remove: { flag: '--remove <version>', help: 'delete a version that is not current', type: TEXT },
    json: JSON_FOR_SCRIPTS,
  },
  verify: {
    version: {
      flag: '--version <version>',
      help: 'check this version (e.g. v000002) instead of the current one',
      type: TEXT,
    },
    deep: {
      flag: '--deep',
      help: 'also read every text and vector: recompute each content_hash, check each vector',
      type: SWITCH,
    },
    sample: {
      flag: '--sample <n>',
      help: 're-embed N random rows through the gateway and compare the vectors',
      type: int(1, 100_000),
    },
    minCosine: {
      flag: '--min-cosine <x>',
      help: 'with --sample: lowest cosine similarity that counts as the same vector',
      type: number(-1, 1),
      default: DEFAULTS.verify.minCosine,
    },
    baseUrl: { ...BASE_URL, help: `with --sample: ${BASE_URL.help}` },
    allowInsecureHttp: ALLOW_INSECURE_HTTP,
    emulator: queryEmulator('with --sample: start the local gateway emulator in-process and use it'),
    json: JSON_FOR_SCRIPTS,
  },
  sync: {
    to: {
      flag: '--to <url>',
      help: 'the store: postgres://user@host:5432/db?table=docs[&schema=public] or lancedb:///path/to/db?table=docs',
      type: TEXT,
      mandatory: true,
    },
    verify: {
      flag: '--verify',
      help: 'compare the store with the dataset and report what differs; write nothing',
      type: SWITCH,
    },
    repair: {
      flag: '--repair',
      help: 'write what --verify finds different, then verify again',
      type: SWITCH,
    },
    replace: {
      flag: '--replace',
      help: 'empty the table first (a model migration into the same table: dims or model changed)',
      type: SWITCH,
    },
    index: {
      flag: '--index <kind>',
      help: 'build an approximate index after loading: hnsw (cosine)',
      type: TEXT,
    },
    halfvec: {
      flag: '--halfvec',
      help: 'PostgreSQL: store half-precision vectors (halfvec; needed to index over 2,000 dims)',
      type: SWITCH,
    },
    sample: {
      flag: '--sample <n>',
      help: 'vectors --verify compares value by value',
      type: int(0, 10_000_000),
      default: DEFAULTS.sync.verifySample,
    },
    json: { flag: '--json', help: 'print the report as JSON', type: SWITCH },
  },
  search: {
    k: { flag: '-k, --k <n>', help: 'how many chunks', type: int(1, 10_000), default: DEFAULTS.search.k },
    ...GATEWAY_TOOL,
    emulator: queryEmulator(
      'embed the query with the local gateway emulator (datasets made with --emulator)',
    ),
    exact: {
      flag: '--exact',
      help: "a store: scan every row instead of using its approximate index (the dataset folder's search is always exact)",
      type: SWITCH,
    },
    json: { flag: '--json', help: 'print the hits as JSON', type: SWITCH },
  },
  eval: {
    versions: {
      flag: '--versions <a,b,…>',
      help: 'versions to evaluate, comma-separated; the first is the baseline',
      type: { kind: 'list' },
      defaultNote: 'the current one, then the newest other',
    },
    queries: {
      flag: '--queries <file>',
      help: 'JSONL of {"query", "relevant": [id | {"id", "chunk_index"}]}',
      type: PATH,
      defaultNote: 'known-item queries drawn from the baseline',
    },
    sample: {
      flag: '--sample <n>',
      help: 'known-item queries to draw',
      type: int(1, 1_000_000),
      default: DEFAULTS.eval.sample,
    },
    seed: {
      flag: '--seed <n>',
      help: 'seed of the drawn queries and of the bootstrap',
      type: int(0),
      default: DEFAULTS.eval.seed,
    },
    k: {
      flag: '-k, --k <n>',
      help: 'results looked at per query',
      type: int(DEFAULTS.eval.k, 10_000),
      default: DEFAULTS.eval.k,
    },
    variants: {
      flag: '--variants <list>',
      help: 'also measure smaller forms of each version: dims:N (a prefix, re-normalised), float16, int8, binary; e.g. dims:256,int8,binary',
      type: TEXT,
    },
    report: {
      flag: '--report <file>',
      help: 'where the HTML report goes',
      type: PATH,
      defaultNote: '<dir>.versions/_eval/<versions>.html',
    },
    maxCost: {
      flag: '--max-cost <usd>',
      help: 'stop before embedding the queries would spend more than this (USD)',
      type: USD,
    },
    ...GATEWAY_TOOL,
    emulator: queryEmulator(
      'embed the queries with the local gateway emulator (datasets made with --emulator)',
    ),
    json: { flag: '--json', help: 'print the evaluation as JSON', type: SWITCH },
  },
  models: { ...GATEWAY_TOOL, json: JSON_FOR_SCRIPTS },
  members: {
    offset: { flag: '--offset <n>', help: 'members to skip', type: int(0) },
    // The gateway's page-size bounds (gateway/wire.ts, MEMBERS_LIMIT_MIN and _MAX).
    limit: { flag: '--limit <n>', help: 'members per page', type: int(1, 100) },
    all: { flag: '--all', help: 'every member, page after page', type: SWITCH },
    ...GATEWAY_TOOL,
    json: JSON_FOR_SCRIPTS,
  },
  transcribe: {
    model: {
      flag: '--model <model>',
      help: 'speech-to-text model, <provider>/<model_name>',
      type: TEXT,
      mandatory: true,
    },
    language: {
      flag: '--language <code>',
      help: 'ISO-639-1 language code',
      type: { kind: 'language' },
      defaultNote: 'detected',
    },
    temperature: { flag: '--temperature <t>', help: 'sampling temperature', type: TEMPERATURE },
    format: {
      flag: '--format <name>',
      help: 'audio format',
      type: TEXT,
      defaultNote: 'from the file extension',
    },
    ...GATEWAY_TOOL,
    json: JSON_FOR_SCRIPTS,
  },
  embed: {
    model: { ...EMBEDDING_MODEL, mandatory: true },
    ...GATEWAY_TOOL,
    json: JSON_FOR_SCRIPTS,
  },
  gateway: {
    port: {
      flag: '--port <n>',
      help: 'port to listen on',
      type: int(0, 65_535),
      defaultNote: 'any free port',
    },
    host: { flag: '--host <host>', help: 'address to bind', type: TEXT, default: DEFAULTS.emulator.host },
    config: {
      flag: '--config <file>',
      help: 'JSON config: keys, credits, rate limits, models, faults',
      type: PATH,
    },
    latency: { flag: '--latency <ms>', help: 'added latency per request', type: int(0, 600_000) },
  },
} as const satisfies Partial<Record<CommandName, Record<string, OwnOptionSpec>>>;

/** The options `name` declares for itself (OWN_OPTIONS), typed as specs, in order. */
export function ownOptionEntries(name: CommandName): [string, OwnOptionSpec][] {
  const own: Partial<Record<CommandName, Record<string, OwnOptionSpec>>> = OWN_OPTIONS;
  return Object.entries(own[name] ?? {});
}

/** `--max-inputs` of '--max-inputs <n>' (`--k` of '-k, --k <n>'): the name errors and help use. */
export function longFlag(spec: FlagSpec): string | undefined {
  return spec.flag?.split(/[ ,]+/).find((part) => part.startsWith('--'));
}

/** The bound, as help says it: ', 1 to 1024' (nothing without an upper bound). */
function rangeText(type: OptionType): string {
  return (type.kind === 'int' || type.kind === 'number') && type.max !== undefined
    ? `, ${type.min} to ${type.max}`
    : '';
}

/** What applies when nothing sets the option, as help shows it; undefined: help shows none. */
export function defaultText(spec: FlagSpec): string | undefined {
  if (spec.type.kind === 'switch') return undefined; // off unless given: nothing to say
  if (spec.defaultNote !== undefined) return spec.defaultNote;
  if (spec.env !== undefined) return `$${spec.env}`;
  if (spec.default === undefined) return undefined;
  return typeof spec.default === 'number' ? String(spec.default / (spec.scale ?? 1)) : String(spec.default);
}

/** The help of an option: choices, what it does, bound, and its default from the table. */
export function describeOption(spec: FlagSpec): string {
  const choices = spec.type.kind === 'enum' ? spec.type.choices.join(' | ') : '';
  const text = [choices, spec.help].filter(Boolean).join('; ') + rangeText(spec.type);
  const shown = defaultText(spec);
  return shown === undefined ? text : `${text} (default: ${shown})`;
}
