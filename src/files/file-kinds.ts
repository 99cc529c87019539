/**
 * Which files a folder corpus reads, by name: text (.txt/.md), images and audio. Only the name is
 * looked at; the bytes decide what a file really is (corpus/images.ts, corpus/audio.ts). Shared by
 * the corpus readers and the manifest's input digest, which lists the same files.
 */

const TEXT_NAME = /\.(?:txt|md)$/i;
const IMAGE_NAME = /\.(?:png|jpe?g|gif|webp)$/i;
const AUDIO_NAME = /\.(?:wav|mp3|flac|ogg|m4a|webm)$/i;

/** True for a name the folder walk picks up. */
export function isTextFileName(name: string): boolean {
  return TEXT_NAME.test(name);
}

/** True for a name a folder of images picks up as an image (the bytes decide what it really is). */
export function isImageFileName(name: string): boolean {
  return IMAGE_NAME.test(name);
}

/** True for a name a folder of audio picks up (the bytes decide what it really is). */
export function isAudioFileName(name: string): boolean {
  return AUDIO_NAME.test(name);
}
