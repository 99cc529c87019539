import { HttpError } from './http.js';
import type { FaultKind, FaultOptions, ScriptEntry } from './options.js';
import { Sfc32 } from './prng.js';

export const FAULT_KINDS = ['429', '500', '502', '503', '524', '529', 'reset', 'empty', 'slow'] as const;
export const SCRIPT_ENTRIES = ['ok', ...FAULT_KINDS] as const;
export const DEFAULT_FAULT_PATHS: readonly string[] = ['/embeddings', '/audio/transcriptions'];
const DEFAULT_RETRY_AFTER_SECONDS = 1;
const DEFAULT_SLOW_MS = 2000;

/**
 * Decides, request by request, which fault (if any) an emulated provider suffers and how late it
 * answers. The script comes first, one entry per request; then one uniform draw per request walks the
 * probabilities in FAULT_KINDS order. Latency has its own PRNG stream, so changing the latency
 * never changes which requests fail.
 */
export class FaultInjector {
  readonly retryAfterMs: number;
  readonly slowMs: number;
  private readonly paths: ReadonlySet<string>;
  private readonly script: readonly ScriptEntry[];
  private scriptPosition = 0;
  private readonly faultRng: Sfc32;
  private readonly latencyRng: Sfc32;

  constructor(private readonly options: FaultOptions = {}) {
    const seed = options.seed ?? 1;
    this.faultRng = Sfc32.fromLabel(`faults:${seed}`);
    this.latencyRng = Sfc32.fromLabel(`latency:${seed}`);
    this.script = options.script ?? [];
    this.paths = new Set(options.paths ?? DEFAULT_FAULT_PATHS);
    this.retryAfterMs = (options.retryAfterSeconds ?? DEFAULT_RETRY_AFTER_SECONDS) * 1000;
    this.slowMs = options.slowMs ?? DEFAULT_SLOW_MS;
  }

  covers(path: string): boolean {
    return this.paths.has(path);
  }

  latencyMs(): number {
    const latency = this.options.latencyMs ?? 0;
    if (typeof latency === 'number') return latency;
    return latency.min + this.latencyRng.nextFloat() * (latency.max - latency.min);
  }

  /** The fault for the next request that reaches a provider, or undefined for none. */
  next(): FaultKind | undefined {
    const scripted = this.script[this.scriptPosition];
    if (scripted !== undefined) {
      this.scriptPosition++;
      return scripted === 'ok' ? undefined : scripted;
    }
    const probabilities = this.options.probabilities;
    if (!probabilities) return undefined;
    const draw = this.faultRng.nextFloat();
    let cumulative = 0;
    for (const kind of FAULT_KINDS) {
      cumulative += probabilities[kind] ?? 0;
      if (draw < cumulative) return kind;
    }
    return undefined;
  }

  /** The error answer of a fault that has one (429, 5xx); provider_name where a provider failed. */
  error(kind: FaultKind, provider: string): HttpError | undefined {
    const from = { provider_name: provider };
    const raw = (message: string) => ({ ...from, raw: JSON.stringify({ error: { message } }) });
    switch (kind) {
      case '429':
        return new HttpError(429, `Rate limit exceeded by provider ${provider}`, from, this.retryAfterMs);
      case '500':
        return new HttpError(500, 'Internal server error');
      case '502':
        return new HttpError(502, `Provider ${provider} returned an error`, raw('upstream connection error'));
      case '503':
        return new HttpError(503, 'Service temporarily unavailable', undefined, this.retryAfterMs);
      case '524':
        return new HttpError(524, `Provider ${provider} timed out`, from);
      case '529':
        return new HttpError(529, `Provider ${provider} is overloaded`, raw('Overloaded'));
      case 'reset':
      case 'empty':
      case 'slow':
        return undefined;
    }
  }
}
