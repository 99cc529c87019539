/**
 * The gateway's base URL. There is no default: a guessed URL (say, a local port) sends the requests,
 * and the key, somewhere nobody chose, and fails later with a less useful message. A command that
 * calls the gateway without one configured stops at once (exit 2), saying what to set.
 */
import { UsageError } from '../errors.js';

const HOW_TO_SET = 'set EMBEDPIPE_BASE_URL (ends in /v1) or pass --base-url URL';

/**
 * What `finalize` records as the manifest's `gateway.baseUrl` when none is configured: finalize calls
 * no gateway (the workers did), so it needs none, and records that it does not know which one.
 */
const UNKNOWN_BASE_URL = 'unknown';

/** Where a base URL can be set; a command without a job file has no `job`. */
export interface BaseUrlSources {
  /** `--base-url`. */
  readonly flag?: string | undefined;
  /** The job file's `gateway.baseUrl`. */
  readonly job?: string | undefined;
  /** EMBEDPIPE_BASE_URL. */
  readonly env?: string | undefined;
}

export interface BaseUrlNeed {
  /**
   * The command can call the local emulator instead (`run`): given, the error for none also names
   * the job file's `gateway.baseUrl` and --emulator; true (the emulator is on), none is needed and
   * this is '' (run calls the emulator it starts, whose URL is known only then).
   */
  readonly emulator?: boolean;
  /** The command calls no gateway and only records the URL (`finalize`): none set is 'unknown'. */
  readonly optional?: boolean;
}

/**
 * The base URL by the options' one rule: the flag, then the job file, then EMBEDPIPE_BASE_URL. None
 * set: a UsageError naming EMBEDPIPE_BASE_URL and --base-url (and what `need` adds), unless `need`
 * says none is needed.
 */
export function resolveBaseUrl(sources: BaseUrlSources, need: BaseUrlNeed = {}): string {
  const baseUrl = sources.flag ?? sources.job ?? sources.env;
  if (baseUrl !== undefined) return baseUrl;
  if (need.optional) return UNKNOWN_BASE_URL;
  if (need.emulator === undefined) throw new UsageError(`no gateway: ${HOW_TO_SET}`);
  if (need.emulator) return '';
  throw new UsageError(
    `no gateway: ${HOW_TO_SET} (or gateway.baseUrl in the job file), or --emulator to use the local gateway emulator`,
  );
}
