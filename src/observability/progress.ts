/**
 * A one-line progress display on stderr, redrawn a few times a second, only when stderr is a
 * terminal (logs and --json output stay clean when piped).
 */
import type { RunStats } from './stats.js';

export interface Progress {
  stop(): void;
}

const formatCount = (n: number): string =>
  n >= 1e6 ? `${(n / 1e6).toFixed(1)}M` : n >= 1e4 ? `${(n / 1e3).toFixed(1)}k` : String(n);

function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '?';
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  return m < 60
    ? `${m}m${String(s % 60).padStart(2, '0')}s`
    : `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
}

/** Fraction done: by bytes while the corpus is still being read, by batches afterwards. */
export function fractionDone(stats: RunStats): number {
  const batchesTotal = stats.batchesPlanned;
  const batchesFinished = stats.batchesDone + stats.batchesSkipped + stats.batchesFailed;
  const byBatches = batchesTotal > 0 ? batchesFinished / batchesTotal : 0;
  if (stats.planningDone) return byBatches;
  const byBytes = stats.bytesTotal > 0 ? stats.bytesRead / stats.bytesTotal : 0;
  return Math.min(byBytes, byBatches || byBytes);
}

export function progressLine(stats: RunStats, now = Date.now()): string {
  const fraction = fractionDone(stats);
  const elapsed = stats.elapsedMs(now);
  const eta = fraction > 0.001 ? (elapsed / fraction) * (1 - fraction) : Number.NaN;
  const width = 20;
  const filled = Math.round(fraction * width);
  const bar = `${'█'.repeat(filled)}${'░'.repeat(width - filled)}`;
  return (
    `${bar} ${(fraction * 100).toFixed(0).padStart(3)}% ` +
    `docs ${formatCount(stats.documents)} chunks ${formatCount(stats.chunks)} tokens ${formatCount(stats.tokens)} ` +
    `req ${formatCount(stats.requests)} retries ${stats.retries} $${stats.cost.toFixed(4)} ` +
    `elapsed ${formatDuration(elapsed)} eta ${formatDuration(eta)}`
  );
}

export function startProgress(stats: RunStats, stream: NodeJS.WriteStream = process.stderr): Progress {
  if (!stream.isTTY) return { stop() {} };
  const draw = () => {
    const columns = stream.columns || 120;
    stream.write(`\r${progressLine(stats).slice(0, columns - 1)}\x1b[K`);
  };
  const timer = setInterval(draw, 250);
  timer.unref();
  return {
    stop() {
      clearInterval(timer);
      draw();
      stream.write('\n');
    },
  };
}
