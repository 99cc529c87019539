/**
 * Audio as a user meets it: the built CLI in a child process, the emulator over real HTTP, WAV files
 * written here, the dataset read back by DuckDB and every vector compared with the emulator's vector
 * of the transcript's chunk text; the transcripts read back from `_transcripts.jsonl`.
 */
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  EMULATOR_API_KEY,
  embeddingFor,
  type RunningEmulator,
  startEmulator,
} from '../../src/emulator/index.js';
import { transcriptOf } from '../../src/emulator/transcription.js';
import { mp3, wav } from '../helpers/audio.js';
import { runArgs, runCli } from '../helpers/cli.js';
import { query, readDataset, sqlString } from '../helpers/duckdb.js';
import { tempFolder } from '../helpers/temp.js';

const MODEL = 'emu/embed-small'; // 384 dims
const DIMS = 384;
const STT = 'emu/whisper-tiny'; // $0.0001 per second
const PRICE_PER_SECOND = 0.0001;

let emulator: RunningEmulator;
const root = await tempFolder('embedpipe-audio-');

beforeAll(async () => {
  emulator = await startEmulator();
});
afterAll(async () => {
  await emulator.close();
});

/** `run` of `input` with transcription by STT into `out`, then `more`. */
const audioRun = (input: string, out: string, ...more: string[]) =>
  runArgs(input, MODEL, '--stt-model', STT, '--out', out, ...more);

const envOf = (e: RunningEmulator, key = EMULATOR_API_KEY) => ({
  EMBEDPIPE_BASE_URL: e.baseUrl,
  EMBEDPIPE_API_KEY: key,
});
const transcriptions = (e = emulator) => e.stats.byPath['/audio/transcriptions'] ?? 0;
const embeddings = (e = emulator) => e.stats.byPath['/embeddings'] ?? 0;

interface TranscriptLine {
  source: string;
  audio_sha256: string;
  format: string;
  model: string;
  language: string | null;
  seconds: number;
  cost: number;
  text: string;
}

async function transcriptsOf(dir: string): Promise<Map<string, TranscriptLine>> {
  const text = await readFile(join(dir, '_transcripts.jsonl'), 'utf8');
  const lines = text
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as TranscriptLine);
  return new Map(lines.map((line) => [line.source, line]));
}

async function rejectsOf(dir: string): Promise<{ file: string; reason: string }[]> {
  const text = await readFile(join(dir, '_rejects.jsonl'), 'utf8');
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line));
}

describe('a folder of WAV files', () => {
  const folder = () => join(root, 'calls');
  const out = () => join(root, 'calls-out');
  const files = {
    'a.wav': wav({ seconds: 2, seed: 1 }),
    'team/b.wav': wav({ seconds: 3, seed: 2 }),
    'c.wav': wav({ seconds: 1, seed: 3, sampleRate: 16000 }),
  } as const;
  const args = () => audioRun(folder(), out(), '--json');

  beforeAll(async () => {
    await mkdir(join(folder(), 'team'), { recursive: true });
    for (const [name, bytes] of Object.entries(files)) await writeFile(join(folder(), name), bytes);
    await writeFile(join(folder(), 'broken.wav'), 'this is not audio');
    await writeFile(join(folder(), 'cut.wav'), files['a.wav'].subarray(0, 30));
    await writeFile(join(folder(), 'notes.txt'), 'Call notes: the launch moves to spring.');
  });

  it('refuses to start without --stt-model, sending nothing', async () => {
    const before = emulator.stats.requests;
    const result = await runCli(
      ['run', '--input', folder(), '--model', MODEL, '--out', join(root, 'no-stt')],
      envOf(emulator),
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/pass --stt-model <provider>\/<model_name>/);
    // The models listing only: nothing transcribed or embedded.
    expect(emulator.stats.requests - before).toBe(1);
    await expect(readdir(join(root, 'no-stt'))).rejects.toThrow();
  });

  it('gives transcripts (side file) and vectors, each the emulator’s vector of its chunk text; corrupt files are rejects', async () => {
    const before = transcriptions();
    const result = await runCli(args(), envOf(emulator));
    expect(result.code, result.stderr).toBe(0);
    const summary = JSON.parse(result.stdout);
    expect(summary).toMatchObject({ status: 'done', documents: 4, rejects: 2 });
    expect(summary.transcription).toMatchObject({
      model: STT,
      files: 3,
      transcribed: 3,
      reused: 0,
      failed: 0,
      requests: 3,
      seconds: 6,
    });
    expect(Number(summary.transcription.costUsd)).toBeCloseTo(6 * PRICE_PER_SECOND, 9);
    expect(transcriptions() - before).toBe(3);

    // The transcripts: what the emulator made of each file's bytes, with its seconds and cost.
    const transcripts = await transcriptsOf(out());
    expect([...transcripts.keys()].sort()).toEqual(['a.wav', 'c.wav', 'team/b.wav']);
    const seconds = { 'a.wav': 2, 'team/b.wav': 3, 'c.wav': 1 } as const;
    for (const [name, bytes] of Object.entries(files)) {
      const line = transcripts.get(name)!;
      const s = seconds[name as keyof typeof seconds];
      expect(line).toMatchObject({
        format: 'wav',
        model: STT,
        language: null,
        seconds: s,
        text: transcriptOf(bytes, s),
      });
      expect(line.cost).toBeCloseTo(s * PRICE_PER_SECOND, 12);
      expect(line.audio_sha256).toBe(
        (await import('node:crypto')).createHash('sha256').update(bytes).digest('hex'),
      );
    }
    // DuckDB reads the side file too.
    const [count] = await query(
      `SELECT count(*)::INT AS n FROM read_json(${sqlString(join(out(), '_transcripts.jsonl'))})`,
    );
    expect(count?.['n']).toBe(3);

    // The dataset: one document per audio file (its id the relative path) plus the text file.
    const rows = await readDataset(out());
    expect([...new Set(rows.map((r) => r.id))]).toEqual(['a.wav', 'c.wav', 'notes.txt', 'team/b.wav']);
    for (const row of rows) {
      expect(row.embedding).toEqual(embeddingFor(MODEL, row.text, DIMS));
      if (row.id === 'notes.txt') continue;
      expect(row.text).toBe(transcripts.get(row.id)!.text);
    }

    // Corrupt audio: rejects naming the file and why; nothing else lost.
    const rejects = await rejectsOf(out());
    expect(rejects.map((r) => [r.file, r.reason])).toEqual([
      ['broken.wav', expect.stringMatching(/^not a WAV, MP3, FLAC, Ogg, M4A or WebM audio file/)],
      ['cut.wav', 'corrupt WAV audio: a truncated fmt chunk'],
    ]);

    const manifest = JSON.parse(await readFile(join(out(), '_manifest.json'), 'utf8'));
    expect(manifest.transcription).toEqual({ model: STT, documents: 3, seconds: 6, costUsd: '0.0006000000' });
    expect(manifest.input.files).toBe(6); // the audio files and the text file
  });

  it('a second run transcribes nothing again and embeds nothing; the new version carries the transcripts', async () => {
    const before = { t: transcriptions(), e: embeddings() };
    const result = await runCli(args(), envOf(emulator));
    expect(result.code, result.stderr).toBe(0);
    const summary = JSON.parse(result.stdout);
    expect(summary).toMatchObject({
      status: 'done',
      documents: 4,
      batches: { embedded: 0 },
      version: { name: 'v000002', current: true },
      transcription: { transcribed: 0, reused: 3, requests: 0, seconds: 0, costUsd: '0.0000000000' },
    });
    expect(transcriptions()).toBe(before.t);
    expect(embeddings()).toBe(before.e);
    expect([...(await transcriptsOf(out())).keys()].sort()).toEqual(['a.wav', 'c.wav', 'team/b.wav']);
    const manifest = JSON.parse(await readFile(join(out(), '_manifest.json'), 'utf8'));
    expect(manifest.transcription).toMatchObject({ documents: 3, seconds: 6, costUsd: '0.0006000000' });
  });

  it('--dry-run: the files it would transcribe, their seconds and cost, with zero transcription calls', async () => {
    await writeFile(join(folder(), 'd.wav'), wav({ seconds: 4, seed: 4 }));
    await writeFile(join(folder(), 'e.mp3'), mp3({ frames: 50, xing: true }));
    const before = { t: transcriptions(), e: embeddings() };
    const priced = await runCli([...args(), '--dry-run', '--stt-price-per-minute', '0.006'], envOf(emulator));
    expect(priced.code, priced.stderr).toBe(0);
    const summary = JSON.parse(priced.stdout);
    const mp3Seconds = (50 * 1152) / 44100;
    expect(summary.status).toBe('dry-run');
    expect(summary.documents).toBe(6);
    expect(summary.transcription.estimate).toMatchObject({
      files: 2,
      unknownFiles: 0,
      estimatedFiles: 0,
      held: 3,
      pricePerMinute: 0.006,
      priceSource: 'setting',
    });
    expect(summary.transcription.estimate.seconds).toBeCloseTo(4 + mp3Seconds, 9);
    expect(Number(summary.transcription.estimate.costUsd)).toBeCloseTo(
      (4 + mp3Seconds) * PRICE_PER_SECOND,
      9,
    );

    // Without a price: what this dataset's transcripts were billed; in words for people.
    const human = await runCli(
      args()
        .filter((a) => a !== '--json')
        .concat('--dry-run'),
      envOf(emulator),
    );
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(
      /transcription with emu\/whisper-tiny: 2 audio files to transcribe: 5\.3 s of audio; estimated cost \$0\.000531 at \$0\.0060\/min \(what this dataset's transcripts were billed\)/,
    );
    expect(transcriptions()).toBe(before.t);
    expect(embeddings()).toBe(before.e);
  });

  it('--dry-run on a fresh dataset without a price says the cost is unknown', async () => {
    const result = await runCli(audioRun(folder(), join(root, 'fresh'), '--dry-run'), envOf(emulator));
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/5 audio files to transcribe: 11\.3 s of audio; cost unknown/);
  });
});

describe('credits run out during transcription', () => {
  it('stops with exit 4; the re-run resumes without transcribing again what was done', async () => {
    const key = 'audio-credit-key-0001';
    // Six files of 2 s ($0.0002 each): the fourth finds $0.0001 left.
    const limited = await startEmulator({ keys: [{ key, credits: 0.0007 }] });
    try {
      const folder = join(root, 'credits');
      await mkdir(folder, { recursive: true });
      for (let i = 1; i <= 6; i++)
        await writeFile(join(folder, `clip-${i}.wav`), wav({ seconds: 2, seed: 10 + i }));
      const out = join(root, 'credits-out');
      const args = audioRun(folder, out, '--stt-concurrency', '1');
      const stopped = await runCli(args, envOf(limited, key));
      expect(stopped.code, stopped.stderr).toBe(4);
      expect(stopped.stderr.trim().split('\n').at(-1)).toMatch(/credits/);
      expect(stopped.stdout).toMatch(/^STOPPED/);
      expect(transcriptions(limited)).toBe(4); // three answered, the fourth refused
      // Readers see no dataset; the version being built kept every transcript paid for.
      await expect(readdir(out)).rejects.toThrow();
      const kept = await transcriptsOf(join(`${out}.versions`, 'v000001'));
      expect([...kept.keys()]).toEqual(['clip-1.wav', 'clip-2.wav', 'clip-3.wav']);

      limited.reset({ keys: [{ key, credits: 100 }] });
      const resumed = await runCli([...args, '--json'], envOf(limited, key));
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(JSON.parse(resumed.stdout).transcription).toMatchObject({ transcribed: 3, reused: 3 });
      expect(transcriptions(limited)).toBe(3);
      const rows = await readDataset(out);
      expect(rows.map((r) => r.id)).toEqual([1, 2, 3, 4, 5, 6].map((i) => `clip-${i}.wav`));
      const transcripts = await transcriptsOf(out);
      for (const row of rows) {
        expect(row.text).toBe(transcripts.get(row.id)!.text);
        expect(row.embedding).toEqual(embeddingFor(MODEL, row.text, DIMS));
      }
    } finally {
      await limited.close();
    }
  });
});

describe('--audio-field', () => {
  it('transcribes the audio a JSONL row names (relative to the file); a row without audio is text', async () => {
    const folder = join(root, 'field');
    await mkdir(join(folder, 'clips'), { recursive: true });
    const clip = wav({ seconds: 2, seed: 42 });
    await writeFile(join(folder, 'clips/intro.wav'), clip);
    await writeFile(join(folder, 'clips/bad.wav'), 'garbage');
    const rows = [
      { id: 'ep-1', audio: 'clips/intro.wav' },
      { id: 'ep-2', audio: 'clips/bad.wav' },
      { id: 'show-notes', text: 'Episode one: an introduction.' },
    ];
    const input = join(folder, 'episodes.jsonl');
    await writeFile(input, rows.map((r) => JSON.stringify(r)).join('\n'));
    const out = join(root, 'field-out');
    const result = await runCli(
      [
        'run',
        '--input',
        input,
        '--audio-field',
        'audio',
        '--model',
        MODEL,
        '--stt-model',
        STT,
        '--language',
        'en',
        '--out',
        out,
        '--json',
      ],
      envOf(emulator),
    );
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({
      documents: 2,
      rejects: 1,
      transcription: { transcribed: 1 },
    });
    const dataset = await readDataset(out);
    expect(dataset.map((r) => r.id)).toEqual(['ep-1', 'show-notes']);
    expect(dataset[0]!.text).toBe(transcriptOf(clip, 2));
    const transcripts = await transcriptsOf(out);
    expect(transcripts.get('clips/intro.wav')).toMatchObject({ language: 'en', seconds: 2 });
    expect((await rejectsOf(out)).map((r) => r.reason)).toEqual([
      expect.stringMatching(/^audio clips\/bad\.wav: not a WAV/),
    ]);
  });
});
