/**
 * What every gateway command needs: settings from flags and the environment (flag wins), a client,
 * and a logger. Keys come from the environment only, never from flags (they would land in shell
 * history and process listings).
 */
import { resolveBaseUrl } from '../config/base-url.js';
import { DEFAULTS } from '../config/defaults.js';
import { ENV_NAMES, type Environment, readEnvironment } from '../config/env.js';
import { MissingKeyError } from '../errors.js';
import { explainLookupFailure } from '../gateway/errors.js';
import type { GatewayClient, RetryingGateway } from '../gateway/index.js';
import { retrying } from '../gateway/index.js';
import { createLogger, type Logger } from '../observability/logger.js';
import { createGateway } from './gateway-edge.js';

export interface GatewayFlags {
  baseUrl?: string;
  /** Let the key go over plain http:// to a remote host (see gateway/transport.ts). */
  allowInsecureHttp?: boolean;
  json?: boolean;
  timeout?: number;
}

export interface CommandContext {
  readonly env: Environment;
  readonly logger: Logger;
  client(): GatewayClient;
}

export function commandContext(flags: GatewayFlags): CommandContext {
  const env = readEnvironment();
  const logger = createLogger({ ...(env.logLevel ? { level: env.logLevel } : {}) });
  return {
    env,
    logger,
    client: () =>
      createGateway(
        {
          baseUrl: resolveBaseUrl({ flag: flags.baseUrl, env: env.baseUrl }),
          ...(flags.allowInsecureHttp ? { allowInsecureHttp: true } : {}),
          ...(flags.timeout !== undefined ? { timeoutMs: flags.timeout } : {}),
        },
        env,
        { management: true },
      ),
  };
}

/** A missing key is an authentication problem (exit 3) naming the variable, before any request. */
export function requireKey(env: Environment, kind: 'api' | 'management', hint = ''): void {
  if (kind === 'api' && !env.apiKey) throw new MissingKeyError(ENV_NAMES.apiKey, hint);
  if (kind === 'management' && !env.managementKey) throw new MissingKeyError(ENV_NAMES.managementKey, hint);
}

/**
 * A command's gateway call(s), retried briefly (DEFAULTS.lookupRetry). Once the retries run out, a
 * gateway never reached is GatewayUnreachableError (exit 6) and, for the models listing, a 404 says
 * the base URL lacks its version segment.
 */
export async function lookup<T>(
  client: GatewayClient,
  call: (gateway: RetryingGateway) => Promise<T>,
  { modelsListing = false }: { modelsListing?: boolean } = {},
): Promise<T> {
  try {
    return await call(retrying(client, DEFAULTS.lookupRetry));
  } catch (error) {
    throw explainLookupFailure(error, client.baseUrl, { modelsListing });
  }
}
