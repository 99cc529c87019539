/**
 * The one error hierarchy of embedpipe. Every error a user can see derives from EmbedpipeError and
 * carries the process exit code the CLI uses for it, so `cli/` maps errors to exits in one place.
 */

/** Process exit codes (documented in README). */
export const ExitCode = {
  ok: 0,
  internal: 1,
  usage: 2,
  authentication: 3,
  credits: 4,
  batchesFailed: 5,
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

/** A job file or option that fails validation; `field` names the offending path (e.g. `input.format`). */
export class ConfigError extends UsageError {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
  }
}

/** Writing the dataset failed (disk full, unwritable folder, a part file that read back wrong). */
export class OutputError extends EmbedpipeError {}

/** The run was interrupted (SIGINT/SIGTERM); everything finished so far is kept and a re-run resumes. */
export class InterruptedError extends EmbedpipeError {
  override readonly exitCode: ExitCode = ExitCode.interrupted;
}
