/**
 * Small valid audio files for tests, built here: WAV (a 44-byte header + PCM, any length), and
 * minimal well-formed MP3, FLAC, Ogg (Vorbis, Opus), M4A and WebM files whose headers give their
 * duration the way real files do. Only the WAV's samples are real; the others are headers and a
 * stand-in payload (the emulator transcribes bytes, it does not decode them).
 */

/** A PCM WAV: `seconds` of 16-bit samples; `seed` changes the samples (and so the transcript). */
export function wav({
  seconds = 1,
  sampleRate = 8000,
  channels = 1,
  seed = 1,
}: {
  seconds?: number;
  sampleRate?: number;
  channels?: number;
  seed?: number;
} = {}): Buffer {
  const blockAlign = channels * 2;
  const dataBytes = Math.round(seconds * sampleRate) * blockAlign;
  const header = Buffer.alloc(44);
  header.write('RIFF', 0, 'latin1');
  header.writeUInt32LE(36 + dataBytes, 4);
  header.write('WAVE', 8, 'latin1');
  header.write('fmt ', 12, 'latin1');
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(channels, 22);
  header.writeUInt32LE(sampleRate, 24);
  header.writeUInt32LE(sampleRate * blockAlign, 28);
  header.writeUInt16LE(blockAlign, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36, 'latin1');
  header.writeUInt32LE(dataBytes, 40);
  const data = Buffer.alloc(dataBytes);
  for (let i = 0; i + 1 < dataBytes; i += 2) {
    data.writeInt16LE(Math.round(8000 * Math.sin((i / 2) * 0.05 * seed)), i);
  }
  return Buffer.concat([header, data]);
}

/** MPEG-1 Layer III, 128 kbit/s, 44.1 kHz, stereo: frames of 417 bytes (1152 samples each). */
const MP3_FRAME_HEADER = [0xff, 0xfb, 0x90, 0x00];
const MP3_FRAME_BYTES = 417;

function mp3Frame(fill = 0x55): Buffer {
  const frame = Buffer.alloc(MP3_FRAME_BYTES, fill);
  Buffer.from(MP3_FRAME_HEADER).copy(frame);
  frame.fill(0, 4, 36); // side information
  return frame;
}

/** An MP3 of `frames` frames, optionally behind an ID3v2 tag, optionally with a Xing frame count. */
export function mp3({
  frames = 20,
  id3 = true,
  xing = false,
}: {
  frames?: number;
  id3?: boolean;
  xing?: boolean;
} = {}): Buffer {
  const parts: Buffer[] = [];
  if (id3) {
    const body = Buffer.alloc(20, 0);
    const tag = Buffer.from([0x49, 0x44, 0x33, 4, 0, 0, 0, 0, 0, body.length]);
    parts.push(tag, body);
  }
  if (xing) {
    const info = mp3Frame(0);
    info.write('Xing', 4 + 32, 'latin1');
    info.writeUInt32BE(1, 4 + 32 + 4); // flags: frame count present
    info.writeUInt32BE(frames, 4 + 32 + 8);
    parts.push(info);
  }
  for (let i = 0; i < frames; i++) parts.push(mp3Frame());
  return Buffer.concat(parts);
}

/** A FLAC stream: STREAMINFO (`samples` at `sampleRate`) and a stand-in frame. */
export function flac({ sampleRate = 16000, samples = 32000 } = {}): Buffer {
  const info = Buffer.alloc(34);
  info.writeUInt16BE(4096, 0);
  info.writeUInt16BE(4096, 2);
  // 20 bits rate, 3 bits channels-1, 5 bits bps-1, 36 bits total samples.
  info[10] = (sampleRate >> 12) & 0xff;
  info[11] = (sampleRate >> 4) & 0xff;
  info[12] = ((sampleRate & 0x0f) << 4) | (0 << 1) | (15 >> 4);
  info[13] = ((15 & 0x0f) << 4) | Math.floor(samples / 2 ** 32);
  info.writeUInt32BE(samples % 2 ** 32, 14);
  const header = Buffer.from([0x80, 0, 0, 34]); // last block, STREAMINFO, 34 bytes
  return Buffer.concat([
    Buffer.from('fLaC', 'latin1'),
    header,
    info,
    Buffer.from([0xff, 0xf8, 0x69, 0x08, 0, 0]),
  ]);
}

function oggPage(body: Buffer, granule: bigint, sequence: number, type = 0): Buffer {
  const segments: number[] = [];
  let left = body.length;
  do {
    segments.push(Math.min(255, left));
    left -= 255;
  } while (left >= 0 && segments.at(-1) === 255);
  const header = Buffer.alloc(27);
  header.write('OggS', 0, 'latin1');
  header[4] = 0;
  header[5] = type;
  header.writeBigInt64LE(granule, 6);
  header.writeUInt32LE(1234, 14);
  header.writeUInt32LE(sequence, 18);
  header[26] = segments.length;
  return Buffer.concat([header, Buffer.from(segments), body]);
}

/** An Ogg Vorbis stream: an identification page (`sampleRate`) and a last page at `samples`. */
export function oggVorbis({ sampleRate = 44100, samples = 88200 } = {}): Buffer {
  const id = Buffer.alloc(30);
  id[0] = 1;
  id.write('vorbis', 1, 'latin1');
  id.writeUInt32LE(0, 7);
  id[11] = 2;
  id.writeUInt32LE(sampleRate, 12);
  return Buffer.concat([oggPage(id, 0n, 0, 2), oggPage(Buffer.alloc(100, 7), BigInt(samples), 1, 4)]);
}

/** An Ogg Opus stream (48 kHz clock, a pre-skip of 312 samples) lasting `seconds`. */
export function oggOpus({ seconds = 3 } = {}): Buffer {
  const head = Buffer.alloc(19);
  head.write('OpusHead', 0, 'latin1');
  head[8] = 1;
  head[9] = 2;
  head.writeUInt16LE(312, 10);
  head.writeUInt32LE(48000, 12);
  return Buffer.concat([
    oggPage(head, 0n, 0, 2),
    oggPage(Buffer.alloc(60, 3), BigInt(seconds * 48000 + 312), 1, 4),
  ]);
}

function box(type: string, ...children: Buffer[]): Buffer {
  const body = Buffer.concat(children);
  const header = Buffer.alloc(8);
  header.writeUInt32BE(8 + body.length);
  header.write(type, 4, 'latin1');
  return Buffer.concat([header, body]);
}

/** An M4A: ftyp, moov/mvhd (`duration` at `timescale`), mdat. */
export function m4a({ timescale = 1000, duration = 2500 } = {}): Buffer {
  const ftyp = box('ftyp', Buffer.from('M4A \0\0\0\0isomM4A ', 'latin1'));
  const mvhd = Buffer.alloc(100);
  mvhd.writeUInt32BE(timescale, 12);
  mvhd.writeUInt32BE(duration, 16);
  return Buffer.concat([ftyp, box('moov', box('mvhd', mvhd)), box('mdat', Buffer.alloc(64, 9))]);
}

function ebml(id: number[], body: Buffer): Buffer {
  // Sizes as 8-byte vints (0x01 + 7 bytes), valid for any length here.
  const size = Buffer.alloc(8);
  size[0] = 0x01;
  size.writeUIntBE(body.length, 2, 6);
  return Buffer.concat([Buffer.from(id), size, body]);
}

/** A WebM: EBML header (DocType `docType`), a Segment with Info (Duration `seconds`) and a Cluster. */
export function webm({ seconds = 4, docType = 'webm' }: { seconds?: number; docType?: string } = {}): Buffer {
  const header = ebml([0x1a, 0x45, 0xdf, 0xa3], ebml([0x42, 0x82], Buffer.from(docType, 'latin1')));
  const scale = Buffer.alloc(3);
  scale.writeUIntBE(1_000_000, 0, 3);
  const duration = Buffer.alloc(8);
  duration.writeDoubleBE(seconds * 1000);
  const info = ebml(
    [0x15, 0x49, 0xa9, 0x66],
    Buffer.concat([ebml([0x2a, 0xd7, 0xb1], scale), ebml([0x44, 0x89], duration)]),
  );
  const cluster = ebml([0x1f, 0x43, 0xb6, 0x75], Buffer.alloc(40, 1));
  return Buffer.concat([header, ebml([0x18, 0x53, 0x80, 0x67], Buffer.concat([info, cluster]))]);
}
