/**
 * Builds the `provider` object of each request and walks the user's provider order when the
 * current provider stays overloaded (529) with fallbacks off. Shared by the whole run: once a
 * provider is exhausted, every request moves on, instead of each one rediscovering it.
 * Only providers change here, never the model, so vectors of one dataset share one space.
 */
import type { ProviderSettings } from '../config/settings.js';
import type { ProviderPreferences } from '../gateway/wire.js';

export class ProviderRouter {
  readonly #settings: ProviderSettings;
  readonly #switchAfter: number;
  #position = 0;
  #overloadsInARow = 0;

  constructor(settings: ProviderSettings, options: { switchAfter?: number } = {}) {
    this.#settings = settings;
    this.#switchAfter = options.switchAfter ?? 3;
  }

  /** The provider whose turn it is (undefined when the user gave no order). */
  get current(): string | undefined {
    return this.#settings.order?.[this.#position];
  }

  preferences(): ProviderPreferences | undefined {
    const { order, allowFallbacks, dataCollection } = this.#settings;
    const prefs: ProviderPreferences = {};
    if (order && order.length > 0) prefs.order = order.slice(this.#position);
    if (allowFallbacks !== undefined) prefs.allow_fallbacks = allowFallbacks;
    if (dataCollection) prefs.data_collection = dataCollection;
    return Object.keys(prefs).length > 0 ? prefs : undefined;
  }

  /** A 529 came back. Returns the provider switched to, when this exhausted the current one. */
  noteOverloaded(): string | undefined {
    const order = this.#settings.order ?? [];
    if (this.#settings.allowFallbacks === true || order.length < 2) return undefined;
    this.#overloadsInARow += 1;
    if (this.#overloadsInARow < this.#switchAfter || this.#position >= order.length - 1) return undefined;
    this.#position += 1;
    this.#overloadsInARow = 0;
    return order[this.#position];
  }

  noteSuccess(): void {
    this.#overloadsInARow = 0;
  }
}
