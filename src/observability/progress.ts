/**
 * Progress on stderr. On a terminal: one live line, redrawn a few times a second, fitted to the
 * terminal's width. Off a terminal (CI, cron, `2> log`): one structured pino line every
 * `intervalMs` (default 10 s, EMBEDPIPE_PROGRESS_INTERVAL_MS), so a log shows how a run goes.
 */
import { DEFAULTS } from '../config/defaults.js';
import type { RetryAfterEvent } from '../domain.js';
import type { Logger } from './logger.js';
import { describePacing, type PacingReading, readPacing } from './pacing.js';
import type { RunStats } from './stats.js';

export interface Progress {
  stop(): void;
}

const formatCount = (n: number): string =>
  n >= 1e6 ? `${(n / 1e6).toFixed(1)}M` : n >= 1e4 ? `${(n / 1e3).toFixed(1)}k` : String(Math.round(n));

const formatRate = (n: number): string =>
  !Number.isFinite(n) ? '?' : n >= 100 ? formatCount(n) : n >= 10 ? n.toFixed(0) : n.toFixed(1);

export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '?';
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  return m < 60
    ? `${m}m${String(s % 60).padStart(2, '0')}s`
    : `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
}

/** UTC, as the logs say it. */
const clock = (ms: number): string => `${new Date(ms).toISOString().slice(11, 19)}Z`;

/** Fraction done: by bytes while the corpus is still being read, by batches afterwards. */
export function fractionDone(stats: RunStats): number {
  const { planned, carried, committed, failedBatches } = stats.ledger;
  const batchesTotal = planned.size;
  const batchesFinished = committed.batches + carried.batches + failedBatches;
  const byBatches = batchesTotal > 0 ? batchesFinished / batchesTotal : 0;
  if (stats.planningDone) return byBatches;
  const byBytes = stats.bytesTotal > 0 ? stats.bytesRead / stats.bytesTotal : 0;
  return Math.min(byBytes, byBatches || byBytes);
}

/** What the progress line and the structured line say: derived from the stats at `now`. */
export interface ProgressSnapshot {
  fraction: number;
  documents: number;
  chunks: number;
  /** Rows committed by this run. */
  vectors: number;
  batchesFinished: number;
  /** Final once planning is done. */
  batchesPlanned: number;
  batchesResumed: number;
  planningDone: boolean;
  tokens: number;
  cost: number;
  requests: number;
  retries: number;
  /** Per second since the first request of this run. */
  vectorsPerSecond: number;
  tokensPerSecond: number;
  elapsedMs: number;
  /** From this run's own pace over the work left (batches a resumed run skipped do not count). */
  etaMs: number;
  /** Set while the gateway's Retry-After holds the run. */
  waitingUntil: number | undefined;
  waitPastCap: boolean;
  window: number | undefined;
  /** What holds the requests back, and the rate they go at. */
  pacing: PacingReading | undefined;
  /** Audio corpora: transcription so far (undefined for a corpus without audio). */
  transcription: TranscriptionProgress | undefined;
}

export interface TranscriptionProgress {
  /** Audio documents read. */
  files: number;
  /** Of them: transcribed by this run, transcripts the dataset held, failed after retries. */
  transcribed: number;
  reused: number;
  failed: number;
  inFlight: number;
  /** Seconds of audio this run transcribed, and what that cost (USD). */
  seconds: number;
  cost: number;
}

export function progressSnapshot(stats: RunStats, now = Date.now()): ProgressSnapshot {
  const elapsedMs = stats.elapsedMs(now);
  const fraction = fractionDone(stats);
  const working = stats.firstRequestAt === undefined ? 0 : Math.max(1, now - stats.firstRequestAt);
  const perSecond = (n: number) => (working > 0 ? (n * 1000) / working : Number.NaN);
  // This run's work: planned batches less the ones already committed by an earlier run.
  const { planned, carried, committed, failedBatches } = stats.ledger;
  const done = committed.batches + failedBatches;
  const left = planned.size - carried.batches - done;
  let etaMs = Number.NaN;
  if (stats.planningDone) {
    etaMs = left <= 0 ? 0 : done > 0 && working > 0 ? (working / done) * left : Number.NaN;
  } else if (carried.batches === 0 && stats.bytesTotal > 0 && stats.bytesRead > 0) {
    // Still reading: the share of the corpus read is the best guess (skipping would distort it).
    if (fraction > 0.001) etaMs = (elapsedMs / fraction) * (1 - fraction);
  }
  const waiting = stats.waitingUntil !== undefined && stats.waitingUntil > now;
  const audio = stats.audio;
  return {
    fraction,
    documents: stats.documents,
    chunks: stats.chunks,
    vectors: committed.rows,
    batchesFinished: committed.batches + carried.batches + failedBatches,
    batchesPlanned: planned.size,
    batchesResumed: carried.batches,
    planningDone: stats.planningDone,
    tokens: stats.gatewayTokens,
    cost: stats.cost,
    requests: stats.requests,
    retries: stats.retries,
    vectorsPerSecond: perSecond(committed.rows),
    tokensPerSecond: perSecond(stats.gatewayTokens),
    elapsedMs,
    etaMs,
    waitingUntil: waiting ? stats.waitingUntil : undefined,
    waitPastCap: waiting && stats.waitPastCap,
    window: stats.window,
    pacing: stats.pacing ? readPacing(stats.pacing()) : undefined,
    transcription:
      audio.files > 0
        ? {
            files: audio.files,
            transcribed: audio.transcribed,
            reused: audio.reused,
            failed: audio.failed,
            inFlight: audio.inFlight,
            seconds: audio.seconds,
            cost: audio.cost,
          }
        : undefined,
  };
}

/** `stt 12/40 files 63.2s $0.0063`: transcripts ready of audio files read, seconds and cost of this run's. */
function transcriptionSegment(t: TranscriptionProgress | undefined): string {
  if (t === undefined) return '';
  const ready = t.transcribed + t.reused;
  const failed = t.failed > 0 ? ` ${t.failed} failed` : '';
  return `stt ${formatCount(ready)}/${formatCount(t.files)} files${failed} ${t.seconds.toFixed(1)}s $${t.cost.toFixed(4)}`;
}

/**
 * The terminal line, at most `width - 1` characters: segments are kept by importance (the wait
 * notice, percentage, ETA, cost, rates, totals…) and shown in reading order.
 */
export function progressLine(stats: RunStats, width = 120, now = Date.now()): string {
  const p = progressSnapshot(stats, now);
  const total = (n: number, of: number) =>
    p.planningDone ? `${formatCount(n)}/${formatCount(of)}` : formatCount(n);
  const barWidth = 20;
  const filled = Math.round(p.fraction * barWidth);
  // [importance (lower is kept first), text]; shown in this order.
  const segments: Array<[number, string]> = [
    [7, `${'█'.repeat(filled)}${'░'.repeat(barWidth - filled)}`],
    [0, `${(p.fraction * 100).toFixed(0).padStart(3)}%`],
    [
      1,
      p.waitingUntil === undefined
        ? ''
        : `${p.waitPastCap ? 'refused: Retry-After' : 'waiting: Retry-After'} until ${clock(p.waitingUntil)}`,
    ],
    [5, `batches ${total(p.batchesFinished, p.batchesPlanned)}`],
    [8, `docs ${formatCount(p.documents)}`],
    [4, `vectors ${formatCount(p.vectors)} (${formatRate(p.vectorsPerSecond)}/s)`],
    [6, `tokens ${formatCount(p.tokens)} (${formatRate(p.tokensPerSecond)}/s)`],
    [9, `req ${formatCount(p.requests)} retries ${p.retries}`],
    [5.5, p.pacing ? describePacing(p.pacing) : ''],
    [4.5, transcriptionSegment(p.transcription)],
    [3, `$${(p.cost + (p.transcription?.cost ?? 0)).toFixed(4)}`],
    [10, `elapsed ${formatDuration(p.elapsedMs)}`],
    [2, `eta ${formatDuration(p.etaMs)}`],
  ];
  const room = Math.max(1, width - 1);
  const kept = new Set<number>();
  let length = -1;
  const order = segments.map((_, i) => i).sort((a, b) => segments[a]![0] - segments[b]![0]);
  for (const i of order) {
    const text = segments[i]![1];
    if (text === '') continue;
    if (length + 1 + text.length > room) continue;
    kept.add(i);
    length += 1 + text.length;
  }
  const line = segments
    .filter((_, i) => kept.has(i))
    .map(([, text]) => text)
    .join(' ');
  return line.slice(0, room);
}

/** The structured line (pino fields) written off a terminal. */
export function progressFields(stats: RunStats, now = Date.now()): Record<string, unknown> {
  const p = progressSnapshot(stats, now);
  const round = (n: number, digits = 1) => (Number.isFinite(n) ? Number(n.toFixed(digits)) : null);
  return {
    percent: round(p.fraction * 100),
    documents: p.documents,
    chunks: p.chunks,
    vectors: p.vectors,
    batches: p.batchesFinished,
    batchesPlanned: p.planningDone ? p.batchesPlanned : null,
    batchesResumed: p.batchesResumed,
    tokens: p.tokens,
    cost: Number(p.cost.toFixed(6)),
    requests: p.requests,
    retries: p.retries,
    vectorsPerSecond: round(p.vectorsPerSecond),
    tokensPerSecond: round(p.tokensPerSecond),
    elapsedS: round(p.elapsedMs / 1000),
    etaS: round(p.etaMs / 1000, 0),
    ...(p.waitingUntil !== undefined && {
      waitingUntil: new Date(p.waitingUntil).toISOString(),
      waitPastCap: p.waitPastCap,
    }),
    ...(p.window !== undefined && { window: p.window }),
    ...(p.pacing !== undefined && { pacing: p.pacing }),
    ...(p.transcription !== undefined && {
      transcription: {
        ...p.transcription,
        seconds: round(p.transcription.seconds),
        cost: Number(p.transcription.cost.toFixed(6)),
      },
    }),
  };
}

export interface ProgressOptions {
  stream?: NodeJS.WriteStream;
  /** Off a terminal, where the structured lines go; without one, nothing is printed off a terminal. */
  logger?: Logger;
  /** Off a terminal, ms between structured lines (default DEFAULTS.progressIntervalMs). */
  intervalMs?: number;
}

export function startProgress(stats: RunStats, options: ProgressOptions = {}): Progress {
  const stream = options.stream ?? process.stderr;
  if (!stream.isTTY) {
    const { logger } = options;
    if (!logger) return { stop() {} };
    const intervalMs = options.intervalMs ?? DEFAULTS.progressIntervalMs;
    const emit = () => logger.info({ progress: progressFields(stats) }, 'progress');
    const timer = setInterval(emit, Math.max(100, intervalMs));
    timer.unref();
    return {
      stop() {
        clearInterval(timer);
        emit();
      },
    };
  }
  const draw = () => {
    const columns = stream.columns || 120;
    stream.write(`\r${progressLine(stats, columns)}\x1b[K`);
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

/**
 * Records Retry-After answers in the stats (the progress line says the run waits, until when) and
 * says so in the log: a new wait of 10 s or more, and any wait past --max-retry-after, at warn.
 */
export function retryAfterReporter(stats: RunStats, logger: Logger): (notice: RetryAfterEvent) => void {
  return (notice) => {
    stats.retryAfterAnswers += 1;
    const wasWaiting = stats.waitingUntil !== undefined && stats.waitingUntil > Date.now();
    if (!wasWaiting || notice.until >= (stats.waitingUntil ?? 0)) {
      stats.waitingUntil = notice.until;
      stats.waitPastCap = notice.pastCap;
    }
    if (notice.window !== undefined) stats.window = notice.window;
    const fields = {
      status: notice.status,
      retryAfterMs: notice.retryAfterMs,
      until: new Date(notice.until).toISOString(),
      ...(notice.window !== undefined && { window: notice.window }),
    };
    if (notice.pastCap) {
      logger.warn(
        fields,
        `the gateway asked to wait until ${fields.until}, longer than --max-retry-after: requests on this key fail until then and their batches are left for a re-run`,
      );
    } else if (notice.newWait && notice.retryAfterMs >= 10_000) {
      logger.warn(
        fields,
        `the gateway asked to wait (Retry-After): no request goes out until ${fields.until}`,
      );
    } else {
      logger.debug(fields, 'Retry-After: waiting');
    }
  };
}

/** The progress interval off a terminal: EMBEDPIPE_PROGRESS_INTERVAL_MS, else the default. */
export function progressIntervalFrom(env: NodeJS.ProcessEnv = process.env): number {
  const value = Number(env['EMBEDPIPE_PROGRESS_INTERVAL_MS']);
  return Number.isFinite(value) && value > 0 ? value : DEFAULTS.progressIntervalMs;
}
