import { ExitCode } from '../errors.js';
import { GatewayError } from '../gateway/errors.js';
import { BatchFailedError } from './gateway-embedder.js';

/**
 * A 402 or a 401 behind a failure, in words; undefined for any other failure. Every later request
 * of the key would fail the same way, so a worker pauses the whole queue on it.
 */
export function accountProblem(error: unknown): string | undefined {
  const cause = error instanceof BatchFailedError ? error.cause : error;
  if (!(cause instanceof GatewayError)) return undefined;
  if (cause.exitCode === ExitCode.credits) return `credits exhausted: ${cause.message}`;
  if (cause.exitCode === ExitCode.authentication) return `authentication failed: ${cause.message}`;
  return undefined;
}
