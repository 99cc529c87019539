/**
 * Audio files of a corpus: what the bytes are (sniffed from their magic numbers, never from the
 * file name), whether their header holds together, and how long they play when the header says so
 * cheaply. The format sent as `input_audio.format` is the one the bytes have: a FLAC file named
 * `.wav` is sent as `flac` (the extension only decides which files a folder reads).
 *
 * | format | signature | structure checked | duration |
 * |---|---|---|---|
 * | wav | `RIFF….WAVE` | a `fmt ` chunk (rate > 0) before a `data` chunk, within the file | data bytes / byte rate, exactly (what the gateway bills) |
 * | mp3 | `ID3` tag, or an MPEG audio frame sync | a valid frame header (after the tag), and the next frame where the file has one | a Xing/Info or VBRI frame count, exactly; else from the bitrate (an estimate) |
 * | flac | `fLaC` | the STREAMINFO block and every metadata block within the file, audio after them | total samples / sample rate |
 * | ogg | `OggS` | the first and last pages within the file | the last page's granule position (Vorbis, Opus); other codecs: unknown |
 * | m4a | `ftyp` at byte 4 | every top-level box within the file, a `moov` box | `mvhd` duration / timescale |
 * | webm | EBML `1A 45 DF A3` | the EBML header (DocType `webm`) and a Segment | the Segment Info's Duration, when present |
 *
 * The checks are structural, not a decode: they catch another file under an audio name, an empty
 * file and a truncated download; damaged samples inside a well-formed file are the gateway's to
 * refuse (then the file is a reject naming the gateway's message).
 */
import { dirname } from 'node:path';
import type { AudioFormat, AudioRef, CorpusEntry } from '../domain.js';
import { sha256Hex } from '../files/planned-media.js';
import { type FileReadOptions, Reason, reject, toEntry } from './entries.js';
import { fieldTarget, hexHead, readMediaFile, shorten } from './media-file.js';

export const AUDIO_FORMATS: readonly AudioFormat[] = ['wav', 'mp3', 'flac', 'ogg', 'm4a', 'webm'];

export interface AudioInfo {
  readonly format: AudioFormat;
  /** Seconds of audio; undefined when the header does not say (cheaply). */
  readonly seconds?: number;
  /** The duration is an estimate (an MP3 without a frame count). */
  readonly estimated?: boolean;
}

type Inspected = AudioInfo | { readonly problem: string };

const TYPE_NAMES: Readonly<Record<AudioFormat, string>> = {
  wav: 'WAV',
  mp3: 'MP3',
  flac: 'FLAC',
  ogg: 'Ogg',
  m4a: 'M4A',
  webm: 'WebM',
};

function corrupt(format: AudioFormat, what: string): { problem: string } {
  return { problem: Reason.corruptAudio(TYPE_NAMES[format], what) };
}

/** The audio format and duration of `bytes`, or why they are not a supported audio file (a reject reason). */
export function inspectAudio(bytes: Uint8Array): Inspected {
  if (bytes.length === 0) return { problem: Reason.emptyAudio };
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const head4 = b.toString('latin1', 0, 4);
  if (head4 === 'RIFF' && b.toString('latin1', 8, 12) === 'WAVE') return inspectWav(b);
  if (head4 === 'RIFF' && b.length >= 12)
    return {
      problem: Reason.unsupportedAudio(
        `a RIFF file of type ${JSON.stringify(b.toString('latin1', 8, 12))}, not WAVE`,
      ),
    };
  if (head4 === 'fLaC') return inspectFlac(b);
  if (head4 === 'OggS') return inspectOgg(b);
  if (b.length >= 8 && b.toString('latin1', 4, 8) === 'ftyp') return inspectMp4(b);
  if (b.length >= 4 && b.readUInt32BE(0) === 0x1a45dfa3) return inspectWebm(b);
  if (b.toString('latin1', 0, 3) === 'ID3') return inspectMp3(b);
  if (frameHeader(b, 0) !== undefined) return inspectMp3(b);
  return { problem: Reason.notAudio(hexHead(b)) };
}

// ---- WAV ----------------------------------------------------------------------------------------

/** A streamed WAV leaves its data size at a placeholder: the bytes that are there count. */
const STREAMED_SIZES = new Set([0, 0xffffffff]);

function inspectWav(b: Buffer): Inspected {
  const format = 'wav';
  let byteRate: number | undefined;
  for (let offset = 12; ; ) {
    if (offset + 8 > b.length) {
      return corrupt(
        format,
        byteRate === undefined ? 'no fmt chunk (truncated header)' : 'no data chunk (truncated)',
      );
    }
    const id = b.toString('latin1', offset, offset + 4);
    const size = b.readUInt32LE(offset + 4);
    const body = offset + 8;
    if (id === 'fmt ') {
      if (size < 16 || body + 16 > b.length) return corrupt(format, 'a truncated fmt chunk');
      const channels = b.readUInt16LE(body + 2);
      const sampleRate = b.readUInt32LE(body + 4);
      byteRate = b.readUInt32LE(body + 8);
      if (channels === 0 || sampleRate === 0 || byteRate === 0)
        return corrupt(
          format,
          `a fmt chunk of ${channels} channels at ${sampleRate} Hz, ${byteRate} bytes/s`,
        );
    } else if (id === 'data') {
      if (byteRate === undefined) return corrupt(format, 'its data chunk comes before any fmt chunk');
      const present = b.length - body;
      if (size > present && !STREAMED_SIZES.has(size))
        return corrupt(format, `truncated (its data chunk says ${size} bytes, the file has ${present})`);
      const dataBytes = STREAMED_SIZES.has(size) ? present : size;
      if (dataBytes === 0) return corrupt(format, 'no audio samples (an empty data chunk)');
      // What the gateway bills: the data chunk's bytes over the byte rate.
      return { format, seconds: dataBytes / byteRate };
    } else if (!/^[\x20-\x7e]{4}$/.test(id)) {
      return corrupt(format, `a damaged chunk at byte ${offset}`);
    }
    offset = body + size + (size % 2); // chunks are padded to even sizes
  }
}

// ---- MP3 ----------------------------------------------------------------------------------------

// biome-ignore format: tables read best as rows
const BITRATES: Readonly<Record<string, readonly number[]>> = {
  '1-1': [0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448],
  '1-2': [0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384],
  '1-3': [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320],
  '2-1': [0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256],
  '2-2': [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
  '2-3': [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
};
const SAMPLE_RATES: Readonly<Record<number, readonly number[]>> = {
  1: [44100, 48000, 32000],
  2: [22050, 24000, 16000],
  25: [11025, 12000, 8000],
};

interface FrameHeader {
  /** 1, 2 or 25 (MPEG 2.5). */
  readonly version: 1 | 2 | 25;
  readonly layer: 1 | 2 | 3;
  /** kbit/s; 0 for a free-format stream. */
  readonly bitrate: number;
  readonly sampleRate: number;
  readonly samplesPerFrame: number;
  readonly mono: boolean;
  /** Bytes of the frame, header included (0 for a free-format stream). */
  readonly length: number;
}

/** The MPEG audio frame header at `offset`, or undefined when there is none. */
function frameHeader(b: Buffer, offset: number): FrameHeader | undefined {
  if (offset + 4 > b.length) return undefined;
  const b1 = b[offset + 1]!;
  const b2 = b[offset + 2]!;
  if (b[offset] !== 0xff || (b1 & 0xe0) !== 0xe0) return undefined;
  const versionBits = (b1 >> 3) & 3;
  const layerBits = (b1 >> 1) & 3;
  const bitrateIndex = b2 >> 4;
  const rateIndex = (b2 >> 2) & 3;
  if (versionBits === 1 || layerBits === 0 || bitrateIndex === 15 || rateIndex === 3) return undefined;
  const version = versionBits === 3 ? 1 : versionBits === 2 ? 2 : 25;
  const layer = (4 - layerBits) as 1 | 2 | 3;
  const bitrate = BITRATES[`${version === 1 ? 1 : 2}-${layer}`]![bitrateIndex]!;
  const sampleRate = SAMPLE_RATES[version]![rateIndex]!;
  const padding = (b2 >> 1) & 1;
  const samplesPerFrame = layer === 1 ? 384 : layer === 2 || version === 1 ? 1152 : 576;
  const length =
    bitrate === 0
      ? 0
      : layer === 1
        ? (Math.floor((12 * bitrate * 1000) / sampleRate) + padding) * 4
        : Math.floor(((samplesPerFrame / 8) * bitrate * 1000) / sampleRate) + padding;
  const mono = b[offset + 3]! >> 6 === 3;
  return { version, layer, bitrate, sampleRate, samplesPerFrame, mono, length };
}

/** How far after an ID3 tag the first frame is looked for (encoders pad). */
const MP3_SYNC_WINDOW = 64 * 1024;

function inspectMp3(b: Buffer): Inspected {
  const format = 'mp3';
  let start = 0;
  if (b.toString('latin1', 0, 3) === 'ID3') {
    if (b.length < 10) return corrupt(format, 'a truncated ID3 tag');
    const sizeBytes = [b[6]!, b[7]!, b[8]!, b[9]!];
    if (sizeBytes.some((byte) => byte >= 0x80)) return corrupt(format, 'a damaged ID3 tag header');
    const size = sizeBytes.reduce((sum, byte) => sum * 128 + byte, 0);
    start = 10 + size + (b[5]! & 0x10 ? 10 : 0);
    if (start >= b.length) return corrupt(format, 'truncated (the file ends inside its ID3 tag)');
    const limit = Math.min(b.length - 4, start + MP3_SYNC_WINDOW);
    while (start <= limit && frameHeader(b, start) === undefined) start += 1;
    if (start > limit) return corrupt(format, 'no MPEG audio frame after its ID3 tag');
  }
  const frame = frameHeader(b, start)!;
  // A second frame where the first one says it is: a stray 0xFFE… in another file is not audio.
  if (frame.length > 0 && start + frame.length + 4 <= b.length) {
    const next = start + frame.length;
    const tag = b.toString('latin1', next, next + 3);
    if (frameHeader(b, next) === undefined && tag !== 'TAG' && tag !== 'ID3')
      return corrupt(format, `a damaged frame at byte ${next}`);
  }
  const exact = vbrFrames(b, start, frame);
  if (exact !== undefined) return { format, seconds: (exact * frame.samplesPerFrame) / frame.sampleRate };
  if (frame.bitrate === 0) return { format };
  // No frame count: constant bitrate assumed (what most players show, too).
  const audioBytes =
    b.length - start - (b.toString('latin1', b.length - 128, b.length - 125) === 'TAG' ? 128 : 0);
  return { format, seconds: (audioBytes * 8) / (frame.bitrate * 1000), estimated: true };
}

/** The frame count of a Xing/Info or VBRI header in the first frame, when it has one. */
function vbrFrames(b: Buffer, start: number, frame: FrameHeader): number | undefined {
  const sideInfo = frame.version === 1 ? (frame.mono ? 17 : 32) : frame.mono ? 9 : 17;
  const xing = start + 4 + sideInfo;
  const tag = b.toString('latin1', xing, xing + 4);
  if ((tag === 'Xing' || tag === 'Info') && xing + 12 <= b.length && b.readUInt32BE(xing + 4) & 1) {
    const frames = b.readUInt32BE(xing + 8);
    return frames > 0 ? frames : undefined;
  }
  const vbri = start + 4 + 32;
  if (b.toString('latin1', vbri, vbri + 4) === 'VBRI' && vbri + 18 <= b.length) {
    const frames = b.readUInt32BE(vbri + 14);
    return frames > 0 ? frames : undefined;
  }
  return undefined;
}

// ---- FLAC ---------------------------------------------------------------------------------------

function inspectFlac(b: Buffer): Inspected {
  const format = 'flac';
  if (b.length < 8 + 34) return corrupt(format, 'truncated header (no complete STREAMINFO block)');
  if ((b[4]! & 0x7f) !== 0 || b.readUIntBE(5, 3) !== 34)
    return corrupt(format, 'the first metadata block is not a STREAMINFO block');
  const info = 8;
  const sampleRate = (b[info + 10]! << 12) | (b[info + 11]! << 4) | (b[info + 12]! >> 4);
  if (sampleRate === 0) return corrupt(format, 'a sample rate of 0 Hz');
  const totalSamples = (b[info + 13]! & 0x0f) * 2 ** 32 + b.readUInt32BE(info + 14);
  // Every metadata block within the file, and audio frames after the last one.
  let offset = 4;
  for (;;) {
    if (offset + 4 > b.length) return corrupt(format, 'truncated (the file ends inside its metadata)');
    const last = (b[offset]! & 0x80) !== 0;
    const end = offset + 4 + b.readUIntBE(offset + 1, 3);
    if (end > b.length) return corrupt(format, 'truncated (a metadata block runs past the end of the file)');
    offset = end;
    if (last) break;
  }
  if (offset >= b.length) return corrupt(format, 'no audio frames after its metadata');
  return totalSamples > 0 ? { format, seconds: totalSamples / sampleRate } : { format };
}

// ---- Ogg ----------------------------------------------------------------------------------------

/** The page at `offset`: its granule position and where it ends, or why it is broken. */
function oggPage(b: Buffer, offset: number): { granule: bigint; body: number; end: number } | string {
  if (offset + 27 > b.length) return 'truncated page header';
  if (b[offset + 4] !== 0) return `an unknown Ogg version ${b[offset + 4]}`;
  const segments = b[offset + 26]!;
  const body = offset + 27 + segments;
  if (body > b.length) return 'truncated page header';
  let size = 0;
  for (let i = 0; i < segments; i++) size += b[offset + 27 + i]!;
  if (body + size > b.length) return 'truncated (a page runs past the end of the file)';
  return { granule: b.readBigInt64LE(offset + 6), body, end: body + size };
}

function inspectOgg(b: Buffer): Inspected {
  const format = 'ogg';
  const first = oggPage(b, 0);
  if (typeof first === 'string') return corrupt(format, first);
  const lastAt = b.lastIndexOf('OggS', b.length - 4, 'latin1');
  const last = lastAt > 0 ? oggPage(b, lastAt) : first;
  if (typeof last === 'string') return corrupt(format, last);
  // The codec's clock: Vorbis counts samples at its own rate, Opus always at 48 kHz.
  let rate: number | undefined;
  let preSkip = 0;
  if (b.toString('latin1', first.body, first.body + 7) === '\x01vorbis' && first.body + 16 <= b.length) {
    rate = b.readUInt32LE(first.body + 12);
  } else if (b.toString('latin1', first.body, first.body + 8) === 'OpusHead' && first.body + 12 <= b.length) {
    rate = 48_000;
    preSkip = b.readUInt16LE(first.body + 10);
  }
  if (!rate || last.granule <= 0n) return { format };
  return { format, seconds: Math.max(0, Number(last.granule) - preSkip) / rate };
}

// ---- M4A (ISO base media) -----------------------------------------------------------------------

/** Image brands of the same container (HEIF, AVIF): a photo, not audio. */
const IMAGE_BRANDS = new Set(['heic', 'heix', 'mif1', 'msf1', 'avif', 'avis']);

function inspectMp4(b: Buffer): Inspected {
  const format = 'm4a';
  const brand = b.toString('latin1', 8, 12);
  if (IMAGE_BRANDS.has(brand)) return { problem: Reason.unsupportedAudio(`an image (ISO brand ${brand})`) };
  let moov: { start: number; end: number } | undefined;
  for (let offset = 0; offset < b.length; ) {
    const box = mp4Box(b, offset, b.length);
    if (typeof box === 'string') return corrupt(format, box);
    if (box.type === 'moov') moov = { start: box.body, end: box.end };
    offset = box.end;
  }
  if (moov === undefined) return corrupt(format, 'no moov box (the file is incomplete)');
  for (let offset = moov.start; offset < moov.end; ) {
    const box = mp4Box(b, offset, moov.end);
    if (typeof box === 'string') return corrupt(format, box);
    if (box.type === 'mvhd') {
      const v1 = b[box.body] === 1;
      const at = box.body + (v1 ? 20 : 12);
      if (at + (v1 ? 12 : 8) > box.end) return corrupt(format, 'a truncated mvhd box');
      const timescale = b.readUInt32BE(at);
      const duration = v1 ? Number(b.readBigUInt64BE(at + 4)) : b.readUInt32BE(at + 4);
      const unknown = v1 ? duration >= 2 ** 53 : duration === 0xffffffff;
      return timescale > 0 && !unknown ? { format, seconds: duration / timescale } : { format };
    }
    offset = box.end;
  }
  return { format };
}

function mp4Box(
  b: Buffer,
  offset: number,
  limit: number,
): { type: string; body: number; end: number } | string {
  if (offset + 8 > limit) return `truncated (a box header at byte ${offset})`;
  const size = b.readUInt32BE(offset);
  const type = b.toString('latin1', offset + 4, offset + 8);
  if (!/^[\x20-\x7e]{4}$/.test(type)) return `a damaged box at byte ${offset}`;
  let body = offset + 8;
  let end: number;
  if (size === 1) {
    if (offset + 16 > limit) return `truncated (its ${type} box header)`;
    end = offset + Number(b.readBigUInt64BE(offset + 8));
    body = offset + 16;
  } else {
    end = size === 0 ? limit : offset + size;
  }
  if (end < body) return `a damaged ${type} box at byte ${offset}`;
  if (end > limit) return `truncated (its ${type} box runs past the end of the file)`;
  return { type, body, end };
}

// ---- WebM (EBML) --------------------------------------------------------------------------------

/** An EBML variable-length integer at `offset`: its value (marker kept for ids) and length. */
function vint(b: Buffer, offset: number, keepMarker: boolean): { value: number; length: number } | undefined {
  if (offset >= b.length) return undefined;
  const first = b[offset]!;
  if (first === 0) return undefined;
  const length = Math.clz32(first) - 23;
  if (length > 8 || offset + length > b.length) return undefined;
  let value = keepMarker ? first : first & (0xff >> length);
  let allOnes = value === 0xff >> length;
  for (let i = 1; i < length; i++) {
    value = value * 256 + b[offset + i]!;
    if (b[offset + i] !== 0xff) allOnes = false;
  }
  // A size of all ones: unknown (a live stream's Segment or Cluster).
  return { value: !keepMarker && allOnes ? -1 : value, length };
}

interface Element {
  readonly id: number;
  readonly body: number;
  /** -1: unknown size (runs to its parent's end). */
  readonly size: number;
}

function element(b: Buffer, offset: number): Element | undefined {
  const id = vint(b, offset, true);
  if (id === undefined) return undefined;
  const size = vint(b, offset + id.length, false);
  if (size === undefined) return undefined;
  return { id: id.value, body: offset + id.length + size.length, size: size.value };
}

const EBML = { header: 0x1a45dfa3, docType: 0x4282, segment: 0x18538067, info: 0x1549a966 } as const;
const INFO = { timecodeScale: 0x2ad7b1, duration: 0x4489 } as const;
const CLUSTER = 0x1f43b675;

function inspectWebm(b: Buffer): Inspected {
  const format = 'webm';
  const header = element(b, 0);
  if (header === undefined || header.size < 0 || header.body + header.size > b.length)
    return corrupt(format, 'truncated EBML header');
  let docType: string | undefined;
  for (let offset = header.body; offset < header.body + header.size; ) {
    const child = element(b, offset);
    if (child === undefined || child.size < 0) return corrupt(format, 'a damaged EBML header');
    if (child.id === EBML.docType)
      docType = b.toString('latin1', child.body, child.body + child.size).replace(/\0+$/, '');
    offset = child.body + child.size;
  }
  if (docType === 'matroska')
    return { problem: Reason.unsupportedAudio('a Matroska file (.mka/.mkv), not WebM') };
  if (docType !== 'webm') return corrupt(format, `EBML DocType ${JSON.stringify(docType ?? '')}, not webm`);
  const segment = element(b, header.body + header.size);
  if (segment === undefined || segment.id !== EBML.segment)
    return corrupt(format, 'no Segment after its header');
  const segmentEnd = segment.size < 0 ? b.length : Math.min(b.length, segment.body + segment.size);
  if (segment.body >= b.length) return corrupt(format, 'an empty Segment');
  for (let offset = segment.body; offset < segmentEnd; ) {
    const child = element(b, offset);
    if (child === undefined || child.size < 0 || child.id === CLUSTER) break;
    if (child.id === EBML.info) return { format, ...webmDuration(b, child) };
    offset = child.body + child.size;
  }
  return { format };
}

function webmDuration(b: Buffer, info: Element): { seconds?: number } {
  let scale = 1_000_000;
  let duration: number | undefined;
  const end = Math.min(b.length, info.body + info.size);
  for (let offset = info.body; offset < end; ) {
    const child = element(b, offset);
    if (child === undefined || child.size < 0 || child.body + child.size > b.length) break;
    if (child.id === INFO.timecodeScale && child.size >= 1 && child.size <= 6)
      scale = b.readUIntBE(child.body, child.size);
    if (child.id === INFO.duration && child.size === 4) duration = b.readFloatBE(child.body);
    if (child.id === INFO.duration && child.size === 8) duration = b.readDoubleBE(child.body);
    offset = child.body + child.size;
  }
  return duration !== undefined && Number.isFinite(duration) && duration > 0
    ? { seconds: (duration * scale) / 1e9 }
    : {};
}

// ---- files and fields ---------------------------------------------------------------------------

/**
 * A local audio file as a reference (read whole once, here, for its format, duration and hash; the
 * transcription reads it again and checks the hash), or the reason it cannot be one.
 */
export async function readAudioFile(
  path: string,
  source: string,
  maxBytes: number,
  onBytes?: (bytes: number) => void,
): Promise<AudioRef | string> {
  const bytes = await readMediaFile(
    path,
    maxBytes,
    { unreadable: Reason.unreadableAudio, empty: Reason.emptyAudio, tooLarge: Reason.audioTooLarge },
    onBytes,
  );
  if (typeof bytes === 'string') return bytes;
  const info = inspectAudio(bytes);
  if ('problem' in info) return info.problem;
  return {
    source,
    path,
    format: info.format,
    bytes: bytes.length,
    sha256: sha256Hex(bytes),
    ...(info.seconds !== undefined ? { seconds: info.seconds } : {}),
    ...(info.estimated ? { secondsEstimated: true } : {}),
  };
}

/** The audio file a CSV/JSONL field names (a path relative to `baseDir`, or a `file:` URL), or a reject reason. */
async function audioFromField(value: string, baseDir: string, maxBytes: number): Promise<AudioRef | string> {
  const target = fieldTarget(value, baseDir);
  if ('invalidFileUrl' in target) return `audio ${value}: invalid file URL`;
  if ('scheme' in target) return `audio ${shorten(value)}: ${Reason.audioNotLocal(`${target.scheme}:`)}`;
  const ref = await readAudioFile(target.path, value, maxBytes);
  return typeof ref === 'string' ? `audio ${value}: ${ref}` : ref;
}

/**
 * A row naming an audio file in its audio field: read and checked before the id is claimed, so a
 * row rejected for its audio never claims its id. Its text is the transcript, filled in later.
 */
export async function audioRowEntry(
  options: FileReadOptions,
  line: number,
  id: string,
  value: string,
): Promise<CorpusEntry> {
  const audio = await audioFromField(
    value,
    dirname(options.path),
    options.maxAudioBytes ?? Number.POSITIVE_INFINITY,
  );
  if (typeof audio === 'string') return reject(options.file, line, audio, id);
  return toEntry(options.ids, options.file, line, id, '', { audio });
}
