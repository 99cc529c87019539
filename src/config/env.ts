/**
 * The only reader of process.env. Everything else receives these values as options, so tests and
 * the library never depend on the ambient environment.
 */
import { UsageError } from '../errors.js';

export interface Environment {
  readonly baseUrl?: string;
  readonly apiKey?: string;
  readonly managementKey?: string;
  readonly redisUrl?: string;
  readonly logLevel?: string;
  /** Attribution headers (spec 5.5): HTTP-Referer and X-Service-Title. */
  readonly referer?: string;
  readonly serviceTitle?: string;
  /** EMBEDPIPE_MIN_FREE_MB: free space a run keeps on its output folder's disk (see free-space.ts). */
  readonly minFreeBytes?: number;
  /** EMBEDPIPE_DIRECT_IO=off: part files through the page cache (see output/direct-write.ts). */
  readonly directIo?: boolean;
}

export function readEnvironment(env: NodeJS.ProcessEnv = process.env): Environment {
  const pick = (name: string): string | undefined => {
    const value = env[name]?.trim();
    return value ? value : undefined;
  };
  const out: { -readonly [K in keyof Environment]: Environment[K] } = {};
  const baseUrl = pick('EMBEDPIPE_BASE_URL');
  const apiKey = pick('EMBEDPIPE_API_KEY');
  const managementKey = pick('EMBEDPIPE_MANAGEMENT_KEY');
  const redisUrl = pick('REDIS_URL');
  const logLevel = pick('EMBEDPIPE_LOG_LEVEL');
  const referer = pick('EMBEDPIPE_HTTP_REFERER');
  const serviceTitle = pick('EMBEDPIPE_SERVICE_TITLE');
  if (baseUrl) out.baseUrl = baseUrl;
  if (apiKey) out.apiKey = apiKey;
  if (managementKey) out.managementKey = managementKey;
  if (redisUrl) out.redisUrl = redisUrl;
  if (logLevel) out.logLevel = logLevel;
  if (referer) out.referer = referer;
  if (serviceTitle) out.serviceTitle = serviceTitle;
  const minFreeMb = pick('EMBEDPIPE_MIN_FREE_MB');
  if (minFreeMb !== undefined) {
    const value = Number(minFreeMb);
    if (!Number.isFinite(value) || value < 0)
      throw new UsageError(`EMBEDPIPE_MIN_FREE_MB must be a number of megabytes ≥ 0, got "${minFreeMb}"`);
    out.minFreeBytes = value * 2 ** 20;
  }
  const directIo = pick('EMBEDPIPE_DIRECT_IO');
  if (directIo !== undefined) {
    const on = SWITCH[directIo.toLowerCase()];
    if (on === undefined)
      throw new UsageError(`EMBEDPIPE_DIRECT_IO must be on or off (also 1/0, true/false), got "${directIo}"`);
    out.directIo = on;
  }
  return out;
}

const SWITCH: Readonly<Record<string, boolean>> = {
  on: true,
  off: false,
  '1': true,
  '0': false,
  true: true,
  false: false,
};

/** Names of the variables, for error messages. */
export const ENV_NAMES = {
  baseUrl: 'EMBEDPIPE_BASE_URL',
  apiKey: 'EMBEDPIPE_API_KEY',
  managementKey: 'EMBEDPIPE_MANAGEMENT_KEY',
  redisUrl: 'REDIS_URL',
} as const;
