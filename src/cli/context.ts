/**
 * What every gateway command needs: settings from flags and the environment (flag wins), a client,
 * and a logger. Keys come from the environment only, never from flags (they would land in shell
 * history and process listings).
 */
import { DEFAULTS } from '../config/defaults.js';
import { type Environment, readEnvironment } from '../config/env.js';
import { GatewayClient } from '../gateway/index.js';
import { createLogger, type Logger } from '../observability/logger.js';

export interface GatewayFlags {
  baseUrl?: string;
  json?: boolean;
  timeout?: number;
}

export interface CommandContext {
  readonly env: Environment;
  readonly logger: Logger;
  client(baseUrlOverride?: string): GatewayClient;
}

export function commandContext(flags: GatewayFlags): CommandContext {
  const env = readEnvironment();
  const logger = createLogger({ ...(env.logLevel ? { level: env.logLevel } : {}) });
  return {
    env,
    logger,
    client: (baseUrlOverride) =>
      new GatewayClient({
        baseUrl: baseUrlOverride ?? flags.baseUrl ?? env.baseUrl ?? DEFAULTS.baseUrl,
        ...(env.apiKey ? { apiKey: env.apiKey } : {}),
        ...(env.managementKey ? { managementKey: env.managementKey } : {}),
        timeoutMs: flags.timeout ?? DEFAULTS.requestTimeoutMs,
        ...attribution(env),
      }),
  };
}

/** The optional attribution headers, from EMBEDPIPE_HTTP_REFERER and EMBEDPIPE_SERVICE_TITLE. */
export function attribution(env: Environment): { referer?: string; serviceTitle?: string } {
  return {
    ...(env.referer ? { referer: env.referer } : {}),
    ...(env.serviceTitle ? { serviceTitle: env.serviceTitle } : {}),
  };
}
