/**
 * The one error hierarchy of embedpipe. Every error a user can see derives from EmbedpipeError and
 * carries the process exit code the CLI uses for it, so `cli/` maps errors to exits in one place.
 */

/** Process exit codes (documented in docs/exit-codes.md). */
export const ExitCode = {
  ok: 0,
  internal: 1,
  usage: 2,
  authentication: 3,
  credits: 4,
  batchesFailed: 5,
  /** No answer from the gateway at all (connection refused, DNS, TLS) once retries ran out. */
  unreachable: 6,
  /** The output folder cannot be created, written or read (not a folder, no permission, disk full). */
  output: 7,
  /** Another run holds the output folder's lock (two overlapping cron runs). */
  locked: 8,
  /** `--max-cost` reached: the run stopped before spending more; re-running resumes. */
  budget: 9,
  /** Redis (distributed mode) cannot be reached. */
  redis: 10,
  /**
   * A vector store (sync, search) cannot be used: a bad URL, refused connection, wrong password, a
   * table of other dims or another model, no permission to create the extension.
   */
  store: 11,
  /** `sync --verify`: the store differs from the dataset (what differs is listed). */
  storeDiffers: 12,
  /** `run --switch-if`: the new version is built, but its retrieval did not meet the rule: not switched. */
  switchHeld: 13,
  interrupted: 130,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

export class EmbedpipeError extends Error {
  readonly exitCode: ExitCode = ExitCode.internal;
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** Bad command-line usage, a bad job file, a missing input: exit 2, one line naming the problem. */
export class UsageError extends EmbedpipeError {
  override readonly exitCode: ExitCode = ExitCode.usage;
}

export interface ConfigIssue {
  readonly field: string;
  readonly message: string;
}

/**
 * A job file or option that fails validation; `field` names the offending path (e.g. `input.format`).
 * `more` are further problems found at the same time (a job file reports every problem at once):
 * the message then holds one line per problem.
 */
export class ConfigError extends UsageError {
  readonly issues: readonly ConfigIssue[];
  constructor(
    readonly field: string,
    message: string,
    more: readonly ConfigIssue[] = [],
  ) {
    const issues = [{ field, message }, ...more];
    super(issues.map((issue) => `${issue.field}: ${issue.message}`).join('\n'));
    this.issues = issues;
  }
}

/** An API or management key the command needs is not set: an authentication problem (exit 3). */
export class MissingKeyError extends EmbedpipeError {
  override readonly exitCode: ExitCode = ExitCode.authentication;
  constructor(
    /** The environment variable to set, e.g. `EMBEDPIPE_API_KEY`. */
    readonly variable: string,
    hint = '',
  ) {
    super(`${variable} is not set: export ${variable}=<your key>${hint}`);
  }
}

/** Writing the dataset failed (disk full, unwritable folder, a part file that read back wrong): exit 7. */
export class OutputError extends EmbedpipeError {
  override readonly exitCode: ExitCode = ExitCode.output;
}

/** Why a filesystem error on the output folder happened, in words, by its code. */
const OUTPUT_PROBLEMS: Readonly<Record<string, string>> = {
  EEXIST: 'it exists and is not a folder',
  ENOTDIR: 'a part of the path is a file, not a folder',
  EACCES: 'no permission to write there',
  EPERM: 'no permission to write there',
  EROFS: 'the file system is read-only',
  ENOSPC: 'no space left on the device',
  EDQUOT: 'the disk quota is exhausted',
  ENAMETOOLONG: 'the path is too long',
};

/** The output folder (`--out`) cannot be created or written: one line naming the path and why. */
export function outputFolderError(dir: string, error: unknown): OutputError {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const why = (code && OUTPUT_PROBLEMS[code]) ?? (error instanceof Error ? error.message : String(error));
  return new OutputError(
    `cannot use ${dir} as the output folder (--out): ${why}${code ? ` (${code})` : ''}`,
    {
      cause: error,
    },
  );
}

/** The run embedded nothing: every input row was rejected, or the input holds no document (exit 2). */
export class NothingEmbeddedError extends UsageError {}

/** The run was interrupted (SIGINT/SIGTERM); everything finished so far is kept and a re-run resumes. */
export class InterruptedError extends EmbedpipeError {
  override readonly exitCode: ExitCode = ExitCode.interrupted;
}

/** Another live run holds the output folder (`--out`): exit 8, naming the holder. */
export class OutputLockedError extends EmbedpipeError {
  override readonly exitCode: ExitCode = ExitCode.locked;
}

/**
 * The next request would take the run's spending past `--max-cost`: the run stops before sending it
 * (exit 9). Everything committed is kept; a re-run with a higher cap resumes.
 */
export class BudgetExceededError extends EmbedpipeError {
  override readonly exitCode: ExitCode = ExitCode.budget;
}

/**
 * A run that stopped after it opened its output (interrupted, out of credits, over --max-cost, …):
 * the error that stopped it, with the run's summary so far (the CLI still prints it, e.g. as JSON
 * for cron). Its exit code and message are the reason's.
 */
export class RunStoppedError extends EmbedpipeError {
  override readonly exitCode: ExitCode;
  constructor(
    readonly reason: EmbedpipeError,
    readonly summary: unknown,
  ) {
    super(reason.message, { cause: reason });
    this.exitCode = reason.exitCode;
  }
}

/** Redis cannot be reached, or refuses what a distributed command needs: exit 10, naming the URL. */
export class RedisError extends EmbedpipeError {
  override readonly exitCode: ExitCode = ExitCode.redis;
}

/** A vector store cannot be used as asked: exit 11, naming the store (never its password). */
export class StoreError extends EmbedpipeError {
  override readonly exitCode: ExitCode = ExitCode.store;
}

/**
 * A dataset version breaks the contract (output/contract.ts): at a switch, the switch is refused and
 * readers keep the previous version; from `verify`, the version is not what it claims. Exit 5.
 */
export class DatasetContractError extends EmbedpipeError {
  override readonly exitCode: ExitCode = ExitCode.batchesFailed;
  constructor(
    readonly dir: string,
    readonly violations: readonly { readonly check: string; readonly message: string }[],
    what = 'the version',
  ) {
    super(
      `${what} ${dir} breaks the dataset contract: ${violations.map((v) => `[${v.check}] ${v.message}`).join(' | ')}`,
    );
  }
}
