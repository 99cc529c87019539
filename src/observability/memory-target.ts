/**
 * A soft target for the process's resident memory. V8 lets its heap grow to a multiple of what
 * survived the last full collection, and external memory (answers' buffers, held until their group
 * commits) grow by 64 MB between collections; on a machine with memory to spare the multiple is
 * large, so a long run's peak rose with its length (docs/benchmarks.md, "Memory"). Past the target
 * the process collects at once instead of when V8 would: at most once a second, and spaced so that
 * collections take at most a small share of the time (one that took 40 ms waits 2 s). A collection
 * that frees next to nothing of the heap and its buffers doubles the wait, up to a minute: a process
 * whose live data is above the target, or an idle worker whose pages the allocator keeps, is not
 * collected in a loop. (Freed memory is not told by RSS: V8 and the allocator keep most pages for
 * reuse, and what the collections do is keep the heap from growing past them.)
 *
 * Past the target V8's heap also grows by a fixed, small factor over what survived its last full
 * collection (`--heap-growing-percent`), instead of the up to fourfold it allows itself: between two
 * of the target's collections a run that reads fast (a nightly that sends little) otherwise let
 * its heap swing by 100 MB (docs/benchmarks.md, a twenty-eighth session). V8 then collects more
 * often on its own, concurrently. Well below the target (under 90% of it), and once stopped, V8
 * chooses again: V8 sets its next limit at the end of each collection, when resident memory has
 * just fallen, and a factor given back at the target itself was V8's own at many of those moments
 * (the heap then swung as before: docs/benchmarks.md, a twenty-ninth session).
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { DEFAULTS } from '../config/defaults.js';
import type { Logger } from './logger.js';

export interface MemoryTargetOptions {
  /** Resident bytes past which a full collection runs. */
  readonly targetBytes: number;
  readonly minGapMs?: number;
  /** Largest share of the time spent in collections this asked for. */
  readonly maxShare?: number;
  /** Longest wait after collections that freed next to nothing. */
  readonly maxGapMs?: number;
  /** The process's resident bytes now. */
  readonly rss?: () => number;
  /** Bytes of the JS heap and the buffers it holds now (what a collection can free). */
  readonly heap?: () => number;
  /** A full, synchronous collection. */
  readonly collect?: () => void;
  /** How far past what survived its last full collection V8's heap may grow, in percent (0: V8 chooses). */
  readonly heapGrowingPercent?: number;
  /** Share of the target under which V8's own factor is given back. */
  readonly heapReleaseShare?: number;
  /** Sets V8's heap growing factor (0: V8's own). */
  readonly setHeapGrowing?: (percent: number) => void;
  readonly now?: () => number;
}

/** What the target cost: the collections it asked for and their time. */
export interface MemoryTargetReport {
  readonly collections: number;
  readonly collectingMs: number;
}

/** A collection that freed less than this share of the target freed next to nothing. */
const USEFUL_SHARE = 0.01;

export class MemoryTarget {
  readonly #targetBytes: number;
  readonly #minGapMs: number;
  readonly #maxShare: number;
  readonly #maxGapMs: number;
  readonly #rss: () => number;
  readonly #heap: () => number;
  readonly #collect: () => void;
  readonly #heapGrowingPercent: number;
  readonly #heapReleaseBytes: number;
  readonly #setHeapGrowing: (percent: number) => void;
  readonly #now: () => number;
  /** Whether V8's heap growing factor is ours (set past the target, kept until well under it). */
  #heapHeld = false;
  #collections = 0;
  #collectingMs = 0;
  /** No collection before this time (ms, `now`'s clock). */
  #notBefore = 0;
  /** The wait after a collection: minGapMs, doubled by each that freed next to nothing. */
  #gapMs: number;

  constructor(options: MemoryTargetOptions) {
    this.#targetBytes = options.targetBytes;
    this.#minGapMs = options.minGapMs ?? DEFAULTS.memoryTarget.minGapMs;
    this.#maxShare = options.maxShare ?? DEFAULTS.memoryTarget.maxShare;
    this.#maxGapMs = options.maxGapMs ?? DEFAULTS.memoryTarget.maxGapMs;
    this.#gapMs = this.#minGapMs;
    this.#rss = options.rss ?? process.memoryUsage.rss;
    this.#heap = options.heap ?? heapAndBuffers;
    // Exposed on the first collection: a process that never passes the target changes nothing.
    this.#collect = options.collect ?? (() => fullCollection()());
    this.#heapGrowingPercent = options.heapGrowingPercent ?? DEFAULTS.memoryTarget.heapGrowingPercent;
    this.#heapReleaseBytes =
      this.#targetBytes * (options.heapReleaseShare ?? DEFAULTS.memoryTarget.heapReleaseShare);
    this.#setHeapGrowing = options.setHeapGrowing ?? setHeapGrowingPercent;
    this.#now = options.now ?? performance.now.bind(performance);
  }

  /** Collects when past the target and the last collection is far enough behind; true when it did. */
  check(): boolean {
    const now = this.#now();
    const rss = this.#rss();
    const past = rss > this.#targetBytes;
    this.#holdHeap(past || (this.#heapHeld && rss > this.#heapReleaseBytes));
    if (!past) {
      this.#gapMs = this.#minGapMs;
      return false;
    }
    if (now < this.#notBefore) return false;
    const before = this.#heap();
    this.#collect();
    const took = this.#now() - now;
    this.#collections += 1;
    this.#collectingMs += took;
    const freed = before - this.#heap();
    this.#gapMs =
      freed < this.#targetBytes * USEFUL_SHARE ? Math.min(2 * this.#gapMs, this.#maxGapMs) : this.#minGapMs;
    this.#notBefore = now + Math.max(this.#gapMs, took / this.#maxShare);
    return true;
  }

  report(): MemoryTargetReport {
    return { collections: this.#collections, collectingMs: Math.round(this.#collectingMs) };
  }

  /** Gives V8 back its own heap growing factor. */
  stop(): void {
    this.#holdHeap(false);
  }

  /** V8's heap growing factor: ours when `held`, V8's own otherwise (set only when that changes). */
  #holdHeap(held: boolean): void {
    const hold = held && this.#heapGrowingPercent > 0;
    if (hold === this.#heapHeld) return;
    this.#heapHeld = hold;
    this.#setHeapGrowing(hold ? this.#heapGrowingPercent : 0);
  }
}

/**
 * Holds the process near `targetMb` (0: no target) until `stop`, which logs what it cost when it
 * collected at all. The timer keeps no process alive.
 */
export function holdMemoryTarget(targetMb: number, logger: Logger): { stop(): MemoryTargetReport } {
  if (targetMb === 0) return { stop: () => ({ collections: 0, collectingMs: 0 }) };
  const target = new MemoryTarget({ targetBytes: targetMb * 2 ** 20 });
  const timer = setInterval(() => target.check(), DEFAULTS.memoryTarget.checkMs);
  timer.unref();
  return {
    stop: () => {
      clearInterval(timer);
      target.stop();
      const report = target.report();
      if (report.collections > 0)
        logger.info({ targetMb, ...report }, 'collected garbage early to stay near the memory target');
      return report;
    },
  };
}

function heapAndBuffers(): number {
  const { heapUsed, external } = process.memoryUsage();
  return heapUsed + external;
}

/** V8 reads the flag each time it sets the heap's next limit, so it holds from the next collection on. */
function setHeapGrowingPercent(percent: number): void {
  setFlagsFromString(`--heap-growing-percent=${percent}`);
}

let gc: (() => void) | undefined;

/** V8's `gc()`: the flag exposes it to contexts made after it is set, so one is made for it alone. */
function fullCollection(): () => void {
  if (gc === undefined) {
    setFlagsFromString('--expose-gc');
    gc = runInNewContext('gc') as () => void;
  }
  return gc;
}
