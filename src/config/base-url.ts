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
export const UNKNOWN_BASE_URL = 'unknown';

/**
 * The first candidate that is set, candidates in order of precedence (flag, then job file, then
 * EMBEDPIPE_BASE_URL); none set: a UsageError naming EMBEDPIPE_BASE_URL and --base-url.
 */
export function gatewayBaseUrl(...candidates: readonly (string | undefined)[]): string {
  const baseUrl = candidates.find((candidate) => candidate !== undefined);
  if (baseUrl === undefined) throw new UsageError(`no gateway: ${HOW_TO_SET}`);
  return baseUrl;
}

/**
 * `run`'s base URL: as gatewayBaseUrl, and the error also names the job file's `gateway.baseUrl` and
 * --emulator. With the emulator on, none is needed: run calls the emulator it starts (whose URL is
 * known only then), so this is '' when none is set.
 */
export function runGatewayBaseUrl(emulator: boolean, ...candidates: readonly (string | undefined)[]): string {
  const baseUrl = candidates.find((candidate) => candidate !== undefined);
  if (baseUrl !== undefined) return baseUrl;
  if (emulator) return '';
  throw new UsageError(
    `no gateway: ${HOW_TO_SET} (or gateway.baseUrl in the job file), or --emulator to use the local gateway emulator`,
  );
}
