/**
 * The transcription stage against the emulator over HTTP: order, bounded concurrency, the
 * transcript store as a cache (and its crash safety), retries and 400s per file.
 */
import { appendFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULTS } from '../../src/config/defaults.js';
import type { TranscriptionSettings } from '../../src/config/settings.js';
import { openCorpus } from '../../src/corpus/index.js';
import type { CorpusEntry, TranscriptionFailure } from '../../src/domain.js';
import { EMULATOR_API_KEY, type RunningEmulator, startEmulator } from '../../src/emulator/index.js';
import { transcriptOf } from '../../src/emulator/transcription.js';
import { GatewayClient } from '../../src/gateway/index.js';
import { silentLogger } from '../../src/observability/logger.js';
import { RunStats } from '../../src/observability/stats.js';
import { TRANSCRIPTS_FILE, TranscriptStore } from '../../src/output/transcripts.js';
import { transcribingStage } from '../../src/transcription/stage.js';
import { GatewayTranscriber } from '../../src/transcription/transcriber.js';
import { wav } from '../helpers/audio.js';
import { tempFolder } from '../helpers/temp.js';

const settings: TranscriptionSettings = { model: 'emu/whisper-tiny', concurrency: 3 };
const fastRetry = { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 5 };

const root = await tempFolder('embedpipe-stage-');
const clips = Array.from({ length: 12 }, (_, i) => ({
  name: `clip-${String(i).padStart(2, '0')}.wav`,
  bytes: wav({ seconds: 1 + (i % 3), seed: i + 1 }),
}));

beforeAll(async () => {
  await mkdir(join(root, 'clips'));
  for (const clip of clips) await writeFile(join(root, 'clips', clip.name), clip.bytes);
  await writeFile(join(root, 'clips', 'readme.txt'), 'Twelve clips.');
});

async function run(
  emulator: RunningEmulator,
  versionDir: string,
  options: { others?: string[]; concurrency?: number } = {},
) {
  const client = new GatewayClient({ baseUrl: emulator.baseUrl, apiKey: EMULATOR_API_KEY, maxInFlight: 8 });
  const store = await TranscriptStore.open({ own: versionDir, others: options.others ?? [] });
  const stats = new RunStats();
  const failures: TranscriptionFailure[] = [];
  const stage = transcribingStage({
    transcriber: new GatewayTranscriber({
      client,
      model: 'emu/whisper-tiny',
      retry: fastRetry,
      logger: silentLogger(),
      onRequest: () => {
        stats.audio.requests += 1;
      },
      onRetry: () => {
        stats.audio.retries += 1;
      },
    }),
    store,
    settings: { ...settings, concurrency: options.concurrency ?? settings.concurrency },
    stats,
    logger: silentLogger(),
    signal: new AbortController().signal,
    onFailure: (failure) => failures.push(failure),
  });
  const entries: CorpusEntry[] = [];
  try {
    for await (const entry of stage(
      openCorpus({ path: join(root, 'clips'), idField: 'id', textField: 'text', format: 'audio' }),
    ))
      entries.push(entry);
  } finally {
    await store.close();
    await client.close();
  }
  return { entries, stats, failures };
}

describe('transcribingStage', () => {
  let emulator: RunningEmulator;
  beforeAll(async () => {
    emulator = await startEmulator({ faults: { latencyMs: { min: 5, max: 60 }, seed: 7 } });
  });
  afterAll(() => emulator.close());

  it('yields every document in corpus order, with at most --stt-concurrency requests in flight', async () => {
    const dir = join(root, 'v1');
    await mkdir(dir);
    const { entries, stats } = await run(emulator, dir);
    expect(entries.map((e) => (e.kind === 'document' ? e.document.id : e.reject.reason))).toEqual([
      ...clips.map((c) => c.name),
      'readme.txt',
    ]);
    clips.forEach((clip, i) => {
      const entry = entries[i]!;
      const seconds = 1 + (i % 3);
      expect(entry.kind === 'document' && entry.document.text).toBe(transcriptOf(clip.bytes, seconds));
      expect(entry.kind === 'document' && entry.document.audio).toBeUndefined();
    });
    expect(stats.audio).toMatchObject({ files: 12, transcribed: 12, reused: 0, requests: 12, inFlight: 0 });
    expect(emulator.stats.maxInFlight).toBeLessThanOrEqual(3);
    expect(emulator.stats.maxInFlight).toBeGreaterThan(1);
    const lines = (await readFile(join(dir, TRANSCRIPTS_FILE), 'utf8')).trim().split('\n');
    expect(lines).toHaveLength(12);
  });

  it('reads the transcripts a version holds (its own, then other versions), copying them forward once', async () => {
    const before = emulator.stats.byPath['/audio/transcriptions'];
    const dir = join(root, 'v2');
    await mkdir(dir);
    const { entries, stats } = await run(emulator, dir, { others: [join(root, 'v1')] });
    expect(emulator.stats.byPath['/audio/transcriptions']).toBe(before);
    expect(stats.audio).toMatchObject({ transcribed: 0, reused: 12 });
    expect(entries.filter((e) => e.kind === 'document')).toHaveLength(13);
    // Run again into the same version: nothing is appended twice.
    await run(emulator, dir, { others: [join(root, 'v1')] });
    expect((await readFile(join(dir, TRANSCRIPTS_FILE), 'utf8')).trim().split('\n')).toHaveLength(12);
  });

  it('survives a torn last line (a crash mid-append): that transcript alone is asked again', async () => {
    const dir = join(root, 'v3');
    await mkdir(dir);
    const full = (await readFile(join(root, 'v1', TRANSCRIPTS_FILE), 'utf8')).trim().split('\n');
    await writeFile(join(dir, TRANSCRIPTS_FILE), `${full.slice(0, 5).join('\n')}\n`);
    await appendFile(join(dir, TRANSCRIPTS_FILE), full[5]!.slice(0, 40));
    const before = emulator.stats.byPath['/audio/transcriptions'] ?? 0;
    const { stats } = await run(emulator, dir);
    expect(stats.audio).toMatchObject({ transcribed: 7, reused: 5 });
    expect((emulator.stats.byPath['/audio/transcriptions'] ?? 0) - before).toBe(7);
    const again = await TranscriptStore.open({ own: dir, others: [] });
    expect(again.size).toBe(12);
    await again.close();
  });
});

describe('per-file outcomes', () => {
  it('a file whose retries run out is a failure (left for a re-run); the others go on', async () => {
    // The first requests fail (503) more often than the retries allow; later ones succeed.
    const flaky = await startEmulator({ faults: { script: ['503', '503', '503'], retryAfterSeconds: 0 } });
    try {
      const dir = join(root, 'flaky');
      await mkdir(dir);
      const { entries, failures, stats } = await run(flaky, dir, { concurrency: 1 });
      expect(failures).toEqual([
        expect.objectContaining({
          stage: 'transcription',
          documentId: 'clip-00.wav',
          source: 'clip-00.wav',
          status: 503,
        }),
      ]);
      expect(
        entries.filter((e) => e.kind === 'document').map((e) => e.kind === 'document' && e.document.id),
      ).toEqual([...clips.slice(1).map((c) => c.name), 'readme.txt']);
      expect(stats.audio).toMatchObject({ failed: 1, transcribed: 11, retries: 2 });
    } finally {
      await flaky.close();
    }
  });

  it('DEFAULTS: 25 MiB per file, 4 in flight', () => {
    expect(DEFAULTS.audio).toEqual({ maxBytes: 25 * 2 ** 20, concurrency: 4 });
  });
});
