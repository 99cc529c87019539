import type { FaultKind } from './options.js';

/** Counters for tests and benchmarks to assert on. Keys are labelled (KeyConfig.name), never raw. */
export interface EmulatorStats {
  requests: number;
  byPath: Record<string, number>;
  /** By HTTP status, and 'reset' for a connection destroyed without an answer. */
  byStatus: Record<string, number>;
  /** Successful answers per provider. */
  byProvider: Record<string, number>;
  faults: Partial<Record<FaultKind, number>>;
  /** Inputs that got a vector back. */
  inputs: number;
  /** Prompt tokens charged. */
  tokens: number;
  /** Inputs that got a vector of a prefix: cut to the context length by a truncating model. */
  truncated: number;
  /** USD charged, per key label. */
  spend: Record<string, number>;
  /** Requests that arrived before the instant a Retry-After told their key, per key label. */
  retryAfterViolations: Record<string, number>;
  /** The first of them, with their timing: what a failing test prints. */
  retryAfterViolationTimes: Array<{ key: string; afterToldMs: number; beforeEndMs: number }>;
  /** Requests being handled now, and the most at once so far (every path and key, refused ones too). */
  inFlight: number;
  maxInFlight: number;
}

export interface RequestRecord {
  /** Arrival, performance.now() ms. */
  at: number;
  /** Time to answer, ms. */
  ms: number;
  method: string;
  /** Spec path (without the /v1 prefix), e.g. '/embeddings'. */
  path: string;
  /** Key label; undefined when the request carried no known key. */
  key: string | undefined;
  status: number | 'reset';
  /** Inputs and prompt tokens of the request (0 until it passed validation). */
  inputs: number;
  tokens: number;
  /** Embeddings: image parts among its inputs, and the encoding_format asked for (once validated). */
  images?: number;
  encoding?: 'float' | 'base64';
  model?: string;
  provider?: string;
  fault?: FaultKind;
}

const VIOLATION_TIMES_KEPT = 20;

function bump(counts: Record<string, number>, key: string, by = 1): void {
  counts[key] = (counts[key] ?? 0) + by;
}

export class Recorder {
  readonly stats: EmulatorStats = {
    requests: 0,
    byPath: {},
    byStatus: {},
    byProvider: {},
    faults: {},
    inputs: 0,
    tokens: 0,
    truncated: 0,
    spend: {},
    retryAfterViolations: {},
    retryAfterViolationTimes: [],
    inFlight: 0,
    maxInFlight: 0,
  };
  readonly requests: RequestRecord[] = [];

  constructor(private readonly keepRecords: boolean) {}

  arrived(): void {
    this.stats.requests++;
    this.stats.inFlight++;
    this.stats.maxInFlight = Math.max(this.stats.maxInFlight, this.stats.inFlight);
  }

  violation(label: string, times: { afterToldMs: number; beforeEndMs: number }): void {
    bump(this.stats.retryAfterViolations, label);
    if (this.stats.retryAfterViolationTimes.length < VIOLATION_TIMES_KEPT)
      this.stats.retryAfterViolationTimes.push({
        key: label,
        afterToldMs: Math.round(times.afterToldMs),
        beforeEndMs: Math.round(times.beforeEndMs),
      });
  }

  fault(kind: FaultKind): void {
    this.stats.faults[kind] = (this.stats.faults[kind] ?? 0) + 1;
  }

  /** A successful answer: what it delivered and what it cost. */
  served(
    label: string,
    provider: string,
    delivered: { inputs: number; tokens: number; truncated: number },
    cost: number,
  ): void {
    bump(this.stats.byProvider, provider);
    bump(this.stats.spend, label, cost);
    this.stats.inputs += delivered.inputs;
    this.stats.tokens += delivered.tokens;
    this.stats.truncated += delivered.truncated;
  }

  answered(record: RequestRecord): void {
    this.stats.inFlight--;
    bump(this.stats.byPath, record.path);
    bump(this.stats.byStatus, String(record.status));
    if (this.keepRecords) this.requests.push(record);
  }
}
