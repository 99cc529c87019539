import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { inspectAudio } from '../../src/corpus/audio.js';
import { resolveCorpusFormat } from '../../src/corpus/index.js';
import type { CorpusEntry } from '../../src/domain.js';
import { UsageError } from '../../src/errors.js';
import { flac, m4a, mp3, oggOpus, oggVorbis, wav, webm } from '../helpers/audio.js';
import { png } from '../helpers/images.js';
import { put, readAll, tempFolder } from './helpers.js';

const root = await tempFolder();
const sha = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

function problem(bytes: Uint8Array): string | undefined {
  const info = inspectAudio(bytes);
  return 'problem' in info ? info.problem : undefined;
}

function summary(entries: CorpusEntry[]) {
  return entries.map((entry) =>
    entry.kind === 'document'
      ? {
          doc: entry.document.id,
          text: entry.document.text,
          ...(entry.document.audio
            ? {
                format: entry.document.audio.format,
                source: entry.document.audio.source,
                seconds: entry.document.audio.seconds,
              }
            : {}),
        }
      : { reject: entry.reject.reason, file: entry.reject.file, id: entry.reject.id },
  );
}

describe('inspectAudio: the format from the bytes, the duration from the header', () => {
  it('WAV: exactly the data bytes over the byte rate', () => {
    expect(inspectAudio(wav({ seconds: 2.5 }))).toEqual({ format: 'wav', seconds: 2.5 });
    expect(inspectAudio(wav({ seconds: 1, sampleRate: 16000, channels: 2 }))).toEqual({
      format: 'wav',
      seconds: 1,
    });
    // A streamed WAV (its data size left at the placeholder): the bytes that are there.
    const streamed = wav({ seconds: 1 });
    streamed.writeUInt32LE(0xffffffff, 40);
    expect(inspectAudio(streamed)).toEqual({ format: 'wav', seconds: 1 });
  });

  it('MP3: a Xing frame count exactly, else an estimate from the bitrate; with or without an ID3 tag', () => {
    expect(inspectAudio(mp3({ frames: 100, xing: true }))).toEqual({
      format: 'mp3',
      seconds: (100 * 1152) / 44100,
    });
    const cbr = inspectAudio(mp3({ frames: 100 }));
    expect(cbr).toMatchObject({ format: 'mp3', estimated: true });
    expect((cbr as { seconds: number }).seconds).toBeCloseTo((100 * 417 * 8) / 128000, 6);
    expect(inspectAudio(mp3({ frames: 3, id3: false }))).toMatchObject({ format: 'mp3', estimated: true });
  });

  it('FLAC, Ogg (Vorbis, Opus), M4A and WebM: from their headers', () => {
    expect(inspectAudio(flac({ sampleRate: 16000, samples: 40000 }))).toEqual({
      format: 'flac',
      seconds: 2.5,
    });
    expect(inspectAudio(oggVorbis({ sampleRate: 44100, samples: 88200 }))).toEqual({
      format: 'ogg',
      seconds: 2,
    });
    expect(inspectAudio(oggOpus({ seconds: 3 }))).toEqual({ format: 'ogg', seconds: 3 });
    expect(inspectAudio(m4a({ timescale: 1000, duration: 2500 }))).toEqual({ format: 'm4a', seconds: 2.5 });
    expect(inspectAudio(webm({ seconds: 4 }))).toEqual({ format: 'webm', seconds: 4 });
  });

  it('says unknown rather than guessing when the header has no length', () => {
    expect(inspectAudio(flac({ samples: 0 }))).toEqual({ format: 'flac' });
    const noInfo = webm({ seconds: 4 });
    // The Info element renamed to a Void element: no Duration anywhere.
    const at = noInfo.indexOf(Buffer.from([0x15, 0x49, 0xa9, 0x66]));
    Buffer.from([0x10, 0x00, 0x00, 0xec]).copy(noInfo, at);
    expect(inspectAudio(noInfo)).toEqual({ format: 'webm' });
  });

  it('names what is wrong: empty, another type, unsupported, a truncated or damaged header', () => {
    expect(problem(Buffer.alloc(0))).toBe('empty audio file (0 bytes)');
    expect(problem(Buffer.from('<html>hello</html>'))).toBe(
      'not a WAV, MP3, FLAC, Ogg, M4A or WebM audio file (it starts with 3c 68 74 6d 6c 3e 68 65)',
    );
    expect(problem(png(2, 2))).toMatch(/^not a WAV, MP3/);
    const full = wav({ seconds: 1 });
    expect(problem(full.subarray(0, 30))).toBe('corrupt WAV audio: a truncated fmt chunk');
    expect(problem(full.subarray(0, 16))).toBe('corrupt WAV audio: no fmt chunk (truncated header)');
    expect(problem(full.subarray(0, 1000))).toBe(
      'corrupt WAV audio: truncated (its data chunk says 16000 bytes, the file has 956)',
    );
    expect(problem(wav({ seconds: 0 }))).toBe('corrupt WAV audio: no audio samples (an empty data chunk)');
    const dataFirst = Buffer.from(full);
    dataFirst.write('junk', 12, 'latin1');
    expect(problem(dataFirst)).toBe('corrupt WAV audio: its data chunk comes before any fmt chunk');
    expect(problem(Buffer.from('RIFF\x10\0\0\0AVI LIST', 'latin1'))).toBe(
      'unsupported audio: a RIFF file of type "AVI ", not WAVE',
    );
    expect(problem(Buffer.concat([mp3({ frames: 1 }).subarray(0, 30), Buffer.alloc(100)]))).toBe(
      'corrupt MP3 audio: no MPEG audio frame after its ID3 tag',
    );
    const damaged = mp3({ frames: 3, id3: false });
    damaged.fill(0, 417, 421);
    expect(problem(damaged)).toBe('corrupt MP3 audio: a damaged frame at byte 417');
    expect(problem(flac().subarray(0, 30))).toBe(
      'corrupt FLAC audio: truncated header (no complete STREAMINFO block)',
    );
    expect(problem(flac().subarray(0, 42))).toBe('corrupt FLAC audio: no audio frames after its metadata');
    const ogg = oggVorbis();
    expect(problem(ogg.subarray(0, ogg.length - 10))).toBe(
      'corrupt Ogg audio: truncated (a page runs past the end of the file)',
    );
    const song = m4a();
    expect(problem(song.subarray(0, song.length - 10))).toBe(
      'corrupt M4A audio: truncated (its mdat box runs past the end of the file)',
    );
    expect(problem(song.subarray(0, 24))).toBe('corrupt M4A audio: no moov box (the file is incomplete)');
    expect(problem(webm({ docType: 'matroska' }))).toBe(
      'unsupported audio: a Matroska file (.mka/.mkv), not WebM',
    );
    expect(problem(webm().subarray(0, 10))).toBe('corrupt WebM audio: truncated EBML header');
  });

  it('trusts the bytes, not the name: a FLAC file is FLAC whatever it is called', async () => {
    await put(root, 'named/really-flac.wav', flac());
    const [entry] = await readAll({ path: join(root, 'named'), format: 'audio' });
    expect(entry?.kind === 'document' && entry.document.audio?.format).toBe('flac');
  });
});

describe('audio corpora', () => {
  it('reads a folder of audio files as audio (detected), one document per file; corrupt files are rejects', async () => {
    const folder = join(root, 'calls');
    const a = wav({ seconds: 2, seed: 1 });
    await put(folder, 'a.wav', a);
    await put(folder, 'team/b.mp3', mp3({ frames: 10, xing: true }));
    await put(folder, 'broken.wav', 'not audio');
    await put(folder, 'empty.ogg', '');
    await put(folder, 'notes.md', 'Agenda for the calls.');
    expect(resolveCorpusFormat({ path: folder })).toBe('audio');
    const entries = await readAll({ path: folder });
    expect(summary(entries)).toEqual([
      { doc: 'a.wav', text: '', format: 'wav', source: 'a.wav', seconds: 2 },
      {
        reject: 'not a WAV, MP3, FLAC, Ogg, M4A or WebM audio file (it starts with 6e 6f 74 20 61 75 64 69)',
        file: 'broken.wav',
        id: 'broken.wav',
      },
      { reject: 'empty audio file (0 bytes)', file: 'empty.ogg', id: 'empty.ogg' },
      { doc: 'notes.md', text: 'Agenda for the calls.' },
      { doc: 'team/b.mp3', text: '', format: 'mp3', source: 'team/b.mp3', seconds: (10 * 1152) / 44100 },
    ]);
    const first = entries[0]!;
    expect(first.kind === 'document' && first.document.audio).toMatchObject({
      path: join(folder, 'a.wav'),
      bytes: a.length,
      sha256: sha(a),
    });
  });

  it('rejects a file over --max-audio-bytes without reading it', async () => {
    const folder = join(root, 'big');
    await put(folder, 'long.wav', wav({ seconds: 2 }));
    const entries = await readAll({ path: folder, maxAudioBytes: 1000 });
    expect(summary(entries)).toEqual([
      {
        reject: 'audio file too large: 32044 bytes (limit 1000, --max-audio-bytes)',
        file: 'long.wav',
        id: 'long.wav',
      },
    ]);
  });

  it('refuses to guess for a folder holding both images and audio', async () => {
    const folder = join(root, 'mixed');
    await put(folder, 'a.wav', wav());
    await put(folder, 'deep/b.png', png(1, 1));
    expect(() => resolveCorpusFormat({ path: folder })).toThrow(UsageError);
    expect(() => resolveCorpusFormat({ path: folder })).toThrow(/--format images .* or --format audio/);
    expect(resolveCorpusFormat({ path: folder, format: 'audio' })).toBe('audio');
    expect(resolveCorpusFormat({ path: folder, format: 'images' })).toBe('images');
  });

  it('--audio-field in JSONL and CSV: local paths relative to the corpus file; rows without audio are text', async () => {
    const folder = join(root, 'field');
    await put(folder, 'clips/x.wav', wav({ seconds: 1 }));
    await put(folder, 'clips/bad.wav', 'nope');
    const jsonl = await put(
      folder,
      'rows.jsonl',
      [
        { id: 'x', audio: 'clips/x.wav', text: 'ignored: the transcript is the text' },
        { id: 'note', text: 'a plain note' },
        { id: 'gone', audio: 'clips/missing.wav' },
        { id: 'bad', audio: 'clips/bad.wav' },
        { id: 'url', audio: 'https://example.com/a.wav' },
        { id: 'num', audio: 7 },
      ]
        .map((row) => JSON.stringify(row))
        .join('\n'),
    );
    const rows = summary(await readAll({ path: jsonl, audioField: 'audio' }));
    expect(rows).toEqual([
      { doc: 'x', text: '', format: 'wav', source: 'clips/x.wav', seconds: 1 },
      { doc: 'note', text: 'a plain note' },
      { reject: 'audio clips/missing.wav: unreadable audio file (ENOENT)', file: jsonl, id: 'gone' },
      {
        reject: expect.stringMatching(/^audio clips\/bad\.wav: not a WAV, MP3/),
        file: jsonl,
        id: 'bad',
      },
      {
        reject:
          'audio https://example.com/a.wav: unsupported https: URL (an audio field holds a local path, relative to the corpus file; URLs are not fetched)',
        file: jsonl,
        id: 'url',
      },
      { reject: 'non-string audio path (number)', file: jsonl, id: 'num' },
    ]);

    // A CSV needs no text column with --audio-field.
    const csv = await put(folder, 'rows.csv', 'id,audio\nx,clips/x.wav\ny,\n');
    expect(summary(await readAll({ path: csv, audioField: 'audio' }))).toEqual([
      { doc: 'x', text: '', format: 'wav', source: 'clips/x.wav', seconds: 1 },
      { reject: 'missing text', file: csv, id: 'y' },
    ]);
  });

  it('refuses --audio-field on a folder and with --image-field', async () => {
    const folder = join(root, 'calls');
    expect(() => resolveCorpusFormat({ path: folder, audioField: 'audio' })).toThrow(
      /--audio-field names a CSV/,
    );
    const csv = await put(root, 'both.csv', 'id,text,img,audio\n');
    expect(() => resolveCorpusFormat({ path: csv, imageField: 'img', audioField: 'audio' })).toThrow(
      /cannot be combined/,
    );
  });
});
