/**
 * Images of a corpus: what the bytes are (sniffed from their magic bytes, never from a file name),
 * whether their header holds together, and the ways an `--image-field` names one: an http(s) URL
 * (passed through, never fetched), a data URL (decoded and checked), or a local path (relative to
 * the corpus file; read, size-checked, sent as a data URL).
 *
 * The checks are structural, not a decode: the signature, the header the gateway's decoder reads
 * first (PNG: every chunk up to IEND is within the file; JPEG: a frame header before the scan;
 * GIF: the screen descriptor; WebP: the RIFF size and the first chunk). They catch a file of
 * another type under an image's name, an empty file and a truncated download; a damaged pixel
 * stream inside a well-formed file is the gateway's to refuse (then a chunk failure).
 */
import { dirname } from 'node:path';
import type { CorpusEntry, ImageMime, ImageRef } from '../domain.js';
import { sha256Hex, toDataUrl } from '../files/planned-media.js';
import { type FileReadOptions, Reason, reject, toEntry } from './entries.js';
import { fieldTarget, hexHead, readMediaFile, shorten } from './media-file.js';

export interface ImageInfo {
  readonly mime: ImageMime;
  readonly width: number;
  readonly height: number;
}

const TYPE_NAMES: Readonly<Record<ImageMime, string>> = {
  'image/png': 'PNG',
  'image/jpeg': 'JPEG',
  'image/gif': 'GIF',
  'image/webp': 'WebP',
};

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a] as const;

/** The image type and size of `bytes`, or why they are not a supported image (a reject reason). */
export function inspectImage(bytes: Uint8Array): ImageInfo | { readonly problem: string } {
  if (bytes.length === 0) return { problem: Reason.emptyImage };
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (startsWith(buffer, PNG_SIGNATURE)) return inspectPng(buffer);
  if (buffer.length >= 3 && buffer[0] === 0xff && buffer[1] === 0xd8 && buffer[2] === 0xff)
    return inspectJpeg(buffer);
  const head6 = buffer.toString('latin1', 0, 6);
  if (head6 === 'GIF87a' || head6 === 'GIF89a') return inspectGif(buffer);
  if (buffer.toString('latin1', 0, 4) === 'RIFF' && buffer.toString('latin1', 8, 12) === 'WEBP')
    return inspectWebp(buffer);
  return { problem: Reason.notAnImage(hexHead(buffer)) };
}

function corrupt(mime: ImageMime, what: string): { problem: string } {
  return { problem: Reason.corruptImage(TYPE_NAMES[mime], what) };
}

function startsWith(buffer: Buffer, prefix: readonly number[]): boolean {
  return buffer.length >= prefix.length && prefix.every((byte, i) => buffer[i] === byte);
}

/** Every chunk from IHDR to IEND must lie within the file (a truncated download ends inside one). */
function inspectPng(b: Buffer): ImageInfo | { problem: string } {
  const mime = 'image/png';
  if (b.length < 8 + 8 + 13) return corrupt(mime, 'truncated header (no complete IHDR chunk)');
  if (b.readUInt32BE(8) !== 13 || b.toString('latin1', 12, 16) !== 'IHDR')
    return corrupt(mime, 'the first chunk is not an IHDR header');
  const width = b.readUInt32BE(16);
  const height = b.readUInt32BE(20);
  if (width === 0 || height === 0) return corrupt(mime, `${width}×${height} pixels`);
  let offset = 8;
  for (;;) {
    if (offset + 8 > b.length) return corrupt(mime, 'truncated (the file ends before its IEND chunk)');
    const length = b.readUInt32BE(offset);
    const type = b.toString('latin1', offset + 4, offset + 8);
    if (!/^[A-Za-z]{4}$/.test(type)) return corrupt(mime, `a damaged chunk at byte ${offset}`);
    const end = offset + 12 + length;
    if (end > b.length) return corrupt(mime, `truncated (its ${type} chunk runs past the end of the file)`);
    if (type === 'IEND') return { mime, width, height };
    offset = end;
  }
}

/** Markers up to the first scan: a frame header (SOFn) must come first, all within the file. */
function inspectJpeg(b: Buffer): ImageInfo | { problem: string } {
  const mime = 'image/jpeg';
  let offset = 2;
  let frame: { width: number; height: number } | undefined;
  for (;;) {
    if (offset + 2 > b.length) return corrupt(mime, 'truncated header (the file ends before its image data)');
    if (b[offset] !== 0xff) return corrupt(mime, `a damaged header (no marker at byte ${offset})`);
    let marker = b[offset + 1]!;
    while (marker === 0xff) {
      offset += 1;
      if (offset + 2 > b.length) return corrupt(mime, 'truncated header');
      marker = b[offset + 1]!;
    }
    offset += 2;
    // Markers without a length: TEM, RSTn, SOI.
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd8)) continue;
    if (marker === 0xd9) return corrupt(mime, 'it ends before any image data');
    if (offset + 2 > b.length) return corrupt(mime, 'truncated header');
    const length = b.readUInt16BE(offset);
    if (length < 2 || offset + length > b.length)
      return corrupt(mime, 'truncated header (a segment runs past the end of the file)');
    const isFrame = marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
    if (isFrame) {
      if (length < 8) return corrupt(mime, 'a damaged frame header');
      frame = { height: b.readUInt16BE(offset + 3), width: b.readUInt16BE(offset + 5) };
      if (frame.width === 0) return corrupt(mime, 'a frame of width 0');
    }
    if (marker === 0xda) {
      if (!frame) return corrupt(mime, 'no frame header before its image data');
      return { mime, ...frame };
    }
    offset += length;
  }
}

/** The logical screen descriptor and its global color table, with something after them. */
function inspectGif(b: Buffer): ImageInfo | { problem: string } {
  const mime = 'image/gif';
  if (b.length < 13) return corrupt(mime, 'truncated header');
  const width = b.readUInt16LE(6);
  const height = b.readUInt16LE(8);
  if (width === 0 || height === 0) return corrupt(mime, `${width}×${height} pixels`);
  const flags = b[10]!;
  const colorTable = flags & 0x80 ? 3 * 2 ** ((flags & 0x07) + 1) : 0;
  if (13 + colorTable >= b.length) return corrupt(mime, 'truncated (the file ends inside its header)');
  return { mime, width, height };
}

/** The RIFF size must fit the file, and the first chunk must be a VP8, VP8L or VP8X header. */
function inspectWebp(b: Buffer): ImageInfo | { problem: string } {
  const mime = 'image/webp';
  if (b.length < 20) return corrupt(mime, 'truncated header');
  const riffEnd = b.readUInt32LE(4) + 8;
  if (riffEnd > b.length)
    return corrupt(mime, `truncated (its RIFF header says ${riffEnd} bytes, the file has ${b.length})`);
  const chunk = b.toString('latin1', 12, 16);
  if (20 + b.readUInt32LE(16) > riffEnd) return corrupt(mime, `truncated (its ${chunk.trim()} chunk)`);
  if (chunk === 'VP8 ') {
    if (b.length < 30 || b[23] !== 0x9d || b[24] !== 0x01 || b[25] !== 0x2a)
      return corrupt(mime, 'a damaged VP8 frame header');
    return { mime, width: b.readUInt16LE(26) & 0x3fff, height: b.readUInt16LE(28) & 0x3fff };
  }
  if (chunk === 'VP8L') {
    if (b.length < 25 || b[20] !== 0x2f) return corrupt(mime, 'a damaged VP8L header');
    const bits = b.readUInt32LE(21);
    return { mime, width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 };
  }
  if (chunk === 'VP8X') {
    if (b.length < 30) return corrupt(mime, 'a damaged VP8X header');
    return { mime, width: b.readUIntLE(24, 3) + 1, height: b.readUIntLE(27, 3) + 1 };
  }
  return corrupt(mime, `an unknown first chunk ${JSON.stringify(chunk)}`);
}

/** Length of the data URL of `bytes` bytes of `mime` (what a request carries). */
function dataUrlLength(mime: ImageMime, bytes: number): number {
  return `data:${mime};base64,`.length + 4 * Math.ceil(bytes / 3);
}

/**
 * A local image file as a reference (read whole once, here, for its type and hash; the request
 * reads it again), or the reason it cannot be one. `source` is what the `image_source` column says.
 */
export async function readImageFile(
  path: string,
  source: string,
  maxBytes: number,
  onBytes?: (bytes: number) => void,
): Promise<ImageRef | string> {
  const bytes = await readMediaFile(
    path,
    maxBytes,
    { unreadable: Reason.unreadableImage, empty: Reason.emptyImage, tooLarge: Reason.imageTooLarge },
    onBytes,
  );
  if (typeof bytes === 'string') return bytes;
  const info = inspectImage(bytes);
  if ('problem' in info) return info.problem;
  return {
    kind: 'file',
    source,
    path,
    mime: info.mime,
    bytes: bytes.length,
    sha256: sha256Hex(bytes),
    urlBytes: dataUrlLength(info.mime, bytes.length),
  };
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * A data URL from a corpus field, checked: `data:image/…;base64,…` whose bytes are a supported
 * image of at most `maxBytes`. It is sent re-encoded with the type its bytes have (which may differ
 * from the one it declares). Its `image_source` is `data:<type>;base64` (the bytes are not repeated
 * in the dataset; `image_sha256` identifies them).
 */
export function parseDataUrl(url: string, maxBytes: number): ImageRef | string {
  const comma = url.indexOf(',');
  if (comma < 0) return Reason.invalidDataUrl('no comma before the data');
  const params = url.slice('data:'.length, comma).split(';');
  const declared = params[0]!.trim().toLowerCase();
  if (!params.slice(1).some((p) => p.trim().toLowerCase() === 'base64'))
    return Reason.invalidDataUrl('not base64 (data:<type>;base64,<data>)');
  if (!/^image\/(?:png|jpe?g|gif|webp)$/.test(declared))
    return Reason.invalidDataUrl(
      `type ${JSON.stringify(declared)} is not image/png, image/jpeg, image/gif or image/webp`,
    );
  const payload = url.slice(comma + 1);
  if (payload.length % 4 === 1 || !BASE64.test(payload))
    return Reason.invalidDataUrl('its data is not valid base64');
  const padding = payload.endsWith('==') ? 2 : payload.endsWith('=') ? 1 : 0;
  const size = Math.floor((payload.length * 3) / 4) - padding;
  if (size === 0) return Reason.emptyImage;
  if (size > maxBytes) return Reason.imageTooLarge(size, maxBytes);
  const bytes = Buffer.from(payload, 'base64');
  const info = inspectImage(bytes);
  if ('problem' in info) return info.problem;
  const sent = toDataUrl(info.mime, bytes);
  return {
    kind: 'data',
    source: `data:${info.mime};base64`,
    url: sent,
    mime: info.mime,
    bytes: bytes.length,
    sha256: sha256Hex(bytes),
    urlBytes: sent.length,
  };
}

/**
 * The image a CSV/JSONL field names, or a reject reason that names the image: an http(s) URL
 * (checked for form only), a data URL, a `file:` URL, or a local path relative to `baseDir` (the
 * corpus file's folder).
 */
async function imageFromField(value: string, baseDir: string, maxBytes: number): Promise<ImageRef | string> {
  const target = fieldTarget(value, baseDir);
  if ('scheme' in target) {
    const { scheme } = target;
    if (scheme === 'http' || scheme === 'https') {
      try {
        new URL(value);
      } catch {
        return `image ${value}: ${Reason.invalidImageUrl}`;
      }
      return { kind: 'url', source: value, url: value, urlBytes: Buffer.byteLength(value) };
    }
    if (scheme === 'data') {
      const ref = parseDataUrl(value, maxBytes);
      return typeof ref === 'string' ? `image data URL: ${ref}` : ref;
    }
    return `image ${shorten(value)}: ${Reason.unsupportedImageUrl(`${scheme}:`)}`;
  }
  if ('invalidFileUrl' in target) return `image ${value}: ${Reason.invalidImageUrl}`;
  const ref = await readImageFile(target.path, value, maxBytes);
  return typeof ref === 'string' ? `image ${value}: ${ref}` : ref;
}

/**
 * A row naming an image in its image field: the image is resolved (read and checked, or a URL
 * passed through) before the id is claimed, so a row rejected for its image never claims its id.
 */
export async function imageRowEntry(
  options: FileReadOptions,
  line: number,
  id: string,
  caption: string,
  value: string,
): Promise<CorpusEntry> {
  const image = await imageFromField(
    value,
    dirname(options.path),
    options.maxImageBytes ?? Number.POSITIVE_INFINITY,
  );
  if (typeof image === 'string') return reject(options.file, line, image, id);
  return toEntry(options.ids, options.file, line, id, caption, { image });
}
