/**
 * The `input` of a request of chunks with images: one multimodal block per chunk, its caption as a
 * text part (left out when empty) and its image as an image_url part, so each block yields one
 * joint vector. A local image is read again here (the plan carries only its path, size and hash)
 * and must still be the bytes that were planned.
 */

import type { ImageRef } from '../domain.js';
import { EmbedpipeError } from '../errors.js';
import { rereadMediaFile, toDataUrl } from '../files/planned-media.js';
import type { ContentPart, MultimodalBlock } from '../gateway/wire.js';

/** A planned image that cannot be sent as planned: a failure of its chunk, not of the batch. */
export class ImageUnavailableError extends EmbedpipeError {}

/** The URL an image part carries: a URL as given, or a local file's bytes as a data URL. */
export async function imageUrlOf(image: ImageRef): Promise<string> {
  if (image.kind !== 'file') return image.url;
  const bytes = await rereadMediaFile(image.path, image);
  if ('unreadable' in bytes) {
    throw new ImageUnavailableError(
      `image ${image.source} cannot be read any more (${bytes.unreadable}); re-run to plan it again`,
    );
  }
  if ('changed' in bytes) {
    throw new ImageUnavailableError(
      `image ${image.source} changed since it was planned; re-run to embed its new content`,
    );
  }
  return toDataUrl(image.mime, bytes);
}

/** One chunk with an image as one block: [text part,] image part. */
export function blockOf(text: string, url: string): MultimodalBlock {
  const content: ContentPart[] = [];
  if (text !== '') content.push({ type: 'text', text });
  content.push({ type: 'image_url', image_url: { url } });
  return { content };
}
