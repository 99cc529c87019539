import { setMaxListeners } from 'node:events';
import { validateEmulatorOptions } from './config.js';
import { answer } from './handler.js';
import { ConnectionReset } from './http.js';
import { LoopWatch } from './loop-watch.js';
import type { EmulatorOptions } from './options.js';
import { createState } from './state.js';
import type { EmulatorStats, RequestRecord } from './stats.js';

/** An emulator without a socket: a Fetch handler and what it remembers. */
export interface Emulator {
  /**
   * Answers one request (URLs under /v1, any host). Rejects with ConnectionReset where a server would
   * end the connection without an answer: a 'reset' fault, or close() while the request waits.
   */
  handle(request: Request): Promise<Response>;
  /** Live counters (a fresh object after reset()). */
  readonly stats: EmulatorStats;
  /** One record per request, in answer order, unless recordRequests is false. */
  readonly requests: RequestRecord[];
  /** The label stats and records use for a raw key; undefined for a key the emulator does not know. */
  keyLabel(key: string): string | undefined;
  /**
   * Forgets everything since start (stats, records, rate windows, spend, Retry-After debts, the fault
   * script's position), optionally taking new options; port and host stay as they are.
   */
  reset(options?: EmulatorOptions): void;
  /** Ends the requests still waiting (they get no answer) and refuses new ones. */
  close(): Promise<void>;
}

/** Validates `options` (ConfigError names a bad field) and builds the emulator; `port` and `host` are the server's. */
export function createEmulator(options: EmulatorOptions = {}): Emulator {
  const initial = validateEmulatorOptions(options);
  let state = createState(initial);
  const closing = new AbortController();
  // Every answer waiting out its latency listens to this one signal: many at once is by design, not
  // a leak (without this, 11 slow answers print MaxListenersExceededWarning).
  setMaxListeners(0, closing.signal);
  const loop = new LoopWatch();

  return {
    handle: async (request) => {
      if (closing.signal.aborted) throw new ConnectionReset('the emulator is closed');
      return answer(state, request, closing.signal, loop);
    },
    get stats() {
      return state.recorder.stats;
    },
    get requests() {
      return state.recorder.requests;
    },
    keyLabel: (key) => state.keys.label(key),
    reset(next) {
      state = createState(next ? validateEmulatorOptions(next) : initial);
    },
    close: async () => {
      loop.stop();
      closing.abort();
    },
  };
}
