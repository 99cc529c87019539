import type { ProviderPreferences } from '../gateway/wire.js';
import { HttpError, isObject } from './http.js';
import type { ProviderConfig } from './options.js';

/** gamma collects data, so `data_collection: 'deny'` has something to exclude. */
export const DEFAULT_PROVIDERS: readonly ProviderConfig[] = [
  { name: 'alpha', collectsData: false },
  { name: 'beta', collectsData: false },
  { name: 'gamma', collectsData: true },
];

/** The request's `provider` object (spec 4.3), checked field by field; 400 names the bad field. */
export function parseProviderPreferences(value: unknown): ProviderPreferences | undefined {
  if (value === undefined) return undefined;
  if (!isObject(value)) throw new HttpError(400, 'provider must be an object');
  const prefs: ProviderPreferences = {};
  const { order, allow_fallbacks, data_collection, options } = value;
  if (order !== undefined) {
    if (!Array.isArray(order) || !order.every((name) => typeof name === 'string')) {
      throw new HttpError(400, 'provider.order must be an array of provider names');
    }
    prefs.order = order;
  }
  if (allow_fallbacks !== undefined) {
    if (typeof allow_fallbacks !== 'boolean')
      throw new HttpError(400, 'provider.allow_fallbacks must be a boolean');
    prefs.allow_fallbacks = allow_fallbacks;
  }
  if (data_collection !== undefined) {
    if (data_collection !== 'allow' && data_collection !== 'deny') {
      throw new HttpError(400, "provider.data_collection must be 'allow' or 'deny'");
    }
    prefs.data_collection = data_collection;
  }
  if (options !== undefined) {
    if (!isObject(options) || !Object.values(options).every(isObject)) {
      throw new HttpError(400, 'provider.options must map provider names to objects');
    }
    prefs.options = options as Record<string, Record<string, unknown>>;
  }
  return prefs;
}

export interface Routing {
  /** Every provider the emulator knows, by name. */
  readonly providers: ReadonlyMap<string, ProviderConfig>;
  readonly overloaded: ReadonlySet<string>;
}

/**
 * Picks the provider that serves a request:
 * - eligible: the model's providers, minus those collecting data when `data_collection` is 'deny'
 *   (none left: 404, as the published gateway answers for an unmatched data policy);
 * - preferred: `order` restricted to eligible names (unknown names skipped), or, when none is
 *   valid, the model's default order;
 * - with fallbacks (the default) the preferred ones are tried, then the other eligible ones; without,
 *   only the first preferred provider is tried;
 * - the first one not overloaded serves; when all are, 529 naming the first.
 */
export function chooseProvider(
  modelId: string,
  modelProviders: readonly string[],
  prefs: ProviderPreferences | undefined,
  routing: Routing,
): string {
  const eligible =
    prefs?.data_collection === 'deny'
      ? modelProviders.filter((name) => routing.providers.get(name)?.collectsData !== true)
      : [...modelProviders];
  if (eligible.length === 0) {
    throw new HttpError(404, `No provider of ${modelId} matches the data policy (data_collection: deny)`);
  }

  const ordered = [...new Set(prefs?.order ?? [])].filter((name) => eligible.includes(name));
  const preferred = ordered.length > 0 ? ordered : eligible;
  const candidates =
    prefs?.allow_fallbacks === false
      ? preferred.slice(0, 1)
      : [...preferred, ...eligible.filter((name) => !preferred.includes(name))];

  const serving = candidates.find((name) => !routing.overloaded.has(name));
  if (serving !== undefined) return serving;
  const first = candidates[0] ?? modelId;
  throw new HttpError(529, `Provider ${first} is overloaded`, {
    provider_name: first,
    raw: JSON.stringify({ error: { type: 'overloaded_error', message: 'Overloaded' } }),
  });
}
