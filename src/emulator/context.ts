import type { Access, Credential } from './keys.js';
import type { EmulatorState } from './state.js';
import type { RequestRecord } from './stats.js';

/** A route's answer: JSON with a status, or a connection destroyed without one. */
export type Outcome = { status: number; body: unknown } | 'reset';

/** What a route handler gets: one authenticated request, and the emulator it reached. */
export interface RequestContext {
  readonly state: EmulatorState;
  /** Spec path, without the /v1 prefix. */
  readonly path: string;
  /** The raw body; handlers parse it, so a malformed one is answered in the documented order. */
  readonly text: string;
  readonly query: URLSearchParams;
  readonly credential: Credential;
  readonly record: RequestRecord;
  /** The earliest it may have arrived: record.at, or the start of a stall it was read after. */
  readonly arrivedAfter: number;
  /** Aborted when the emulator closes: waits end early. */
  readonly signal: AbortSignal;
}

export interface Route {
  readonly access: Access;
  readonly handle: (context: RequestContext) => Promise<Outcome> | Outcome;
}
