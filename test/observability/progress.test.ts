/** The progress line and the structured progress record: pure functions of the stats, the width and the time. */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/observability/logger.js';
import {
  progressFields,
  progressLine,
  retryAfterReporter,
  startProgress,
} from '../../src/observability/progress.js';
import { RunStats } from '../../src/observability/stats.js';
import { book } from '../helpers/ledger.js';

function midRun(): RunStats {
  const stats = new RunStats();
  Object.assign(stats, {
    documents: 5000,
    chunks: 20_000,
    gatewayTokens: 4_000_000,
    requests: 80,
    retries: 2,
    cost: 0.08,
    planningDone: true,
    firstRequestAt: stats.startedAt,
  });
  return book(stats, { planned: 40, embedded: 20, rows: 10_000 });
}

describe('progressLine fits the terminal', () => {
  it('keeps cost and ETA at 80 columns (they were cut before), within the width', () => {
    const stats = midRun();
    const line = progressLine(stats, 80, stats.startedAt + 20_000);
    expect(line.length).toBeLessThanOrEqual(79);
    expect(line).toContain('50%');
    expect(line).toContain('$0.0800');
    expect(line).toMatch(/eta 20s/);
    expect(line).toMatch(/vectors 10\.0k \(500\/s\)/);
  });

  it('drops the least useful parts first as the terminal narrows, never passing its width', () => {
    const stats = midRun();
    const now = stats.startedAt + 20_000;
    let previous = Number.POSITIVE_INFINITY;
    for (const width of [200, 120, 100, 80, 60, 40, 20, 10]) {
      const line = progressLine(stats, width, now);
      expect(line.length).toBeLessThan(width);
      expect(line.length).toBeLessThanOrEqual(previous);
      previous = line.length;
    }
    expect(progressLine(stats, 40, now)).toMatch(/^ *50% .*eta 20s/);
    expect(progressLine(stats, 200, now)).toContain('█');
  });

  it('shows transcription (files ready of read, seconds, cost) for an audio corpus, and adds its cost to the total', () => {
    const stats = midRun();
    Object.assign(stats.audio, { files: 40, transcribed: 9, reused: 3, seconds: 63.24, cost: 0.0063 });
    const now = stats.startedAt + 20_000;
    const line = progressLine(stats, 200, now);
    expect(line).toContain('stt 12/40 files 63.2s $0.0063');
    expect(line).toContain('$0.0863');
    expect(progressFields(stats, now)['transcription']).toEqual({
      files: 40,
      transcribed: 9,
      reused: 3,
      failed: 0,
      inFlight: 0,
      seconds: 63.2,
      cost: 0.0063,
    });
    // A text corpus: no transcription segment or field.
    expect(progressLine(midRun(), 200, now)).not.toContain('stt');
    expect(progressFields(midRun(), now)).not.toHaveProperty('transcription');
  });

  it('says "x/y" only once planning is done', () => {
    const stats = midRun();
    stats.planningDone = false;
    stats.bytesTotal = 100;
    stats.bytesRead = 50;
    expect(progressLine(stats, 200, stats.startedAt + 1000)).toMatch(/batches 20 /);
    stats.planningDone = true;
    expect(progressLine(stats, 200, stats.startedAt + 1000)).toMatch(/batches 20\/40 /);
  });

  it('on a resumed run, estimates from the work left at this run’s pace, not from batches skipped', () => {
    const stats = new RunStats();
    // 90 of 100 batches were committed by an earlier run; this run did 5 of its 10 in 50 s.
    book(stats, { planned: 100, resumed: 90, embedded: 5 });
    Object.assign(stats, {
      planningDone: true,
      firstRequestAt: stats.startedAt + 10_000,
    });
    const line = progressLine(stats, 200, stats.startedAt + 60_000);
    expect(line).toMatch(/95%/);
    // By overall fraction it would have said 60 s / 0.95 × 0.05 ≈ 3 s.
    expect(line).toMatch(/eta 50s/);
  });

  it('says when the run waits on Retry-After, and until when', () => {
    const stats = midRun();
    stats.waitingUntil = Date.parse('2026-11-22T10:00:30Z');
    const line = progressLine(stats, 80, stats.waitingUntil - 5000);
    expect(line).toContain('waiting: Retry-After until 10:00:30Z');
    expect(progressLine(stats, 200, stats.waitingUntil + 1)).not.toContain('Retry-After');
  });
});

describe('progress off a terminal', () => {
  it('writes a pino JSON progress line every interval, and a last one at the end', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(...String(chunk).split('\n').filter(Boolean));
        done();
      },
    });
    const logger = createLogger({ destination: sink, pretty: false });
    const stats = midRun();
    const notStderr = Object.assign(new Writable({ write: (_c, _e, done) => done() }), { isTTY: false });
    const progress = startProgress(stats, {
      logger,
      intervalMs: 100,
      stream: notStderr as unknown as NodeJS.WriteStream,
    });
    await new Promise((resolve) => setTimeout(resolve, 350));
    progress.stop();
    const records = lines.map((line) => JSON.parse(line));
    expect(records.length).toBeGreaterThanOrEqual(3);
    expect(records[0]).toMatchObject({
      level: 30,
      msg: 'progress',
      progress: {
        documents: 5000,
        vectors: 10_000,
        tokens: 4_000_000,
        cost: 0.08,
        batches: 20,
        batchesPlanned: 40,
      },
    });
    expect(records[0].progress).toHaveProperty('vectorsPerSecond');
    expect(records[0].progress).toHaveProperty('etaS');
  });

  it('the structured record carries the Retry-After wait', () => {
    const stats = midRun();
    const logger = createLogger({
      destination: new Writable({ write: (_c, _e, done) => done() }),
      pretty: false,
    });
    const until = Date.now() + 60_000;
    retryAfterReporter(
      stats,
      logger,
    )({
      status: 429,
      retryAfterMs: 60_000,
      until,
      newWait: true,
      pastCap: false,
      window: 4,
    });
    expect(progressFields(stats)).toMatchObject({ waitingUntil: new Date(until).toISOString(), window: 4 });
  });
});
