/**
 * Audio corpora: a folder of audio files, or a single audio file.
 *
 * - Every .wav/.mp3/.flac/.ogg/.m4a/.webm file is one document (its format is sniffed from its
 *   bytes, see audio.ts), its id and transcript source the path relative to the folder with `/`,
 *   extension included (`calls/2024-01-02.wav`), as in a text folder. Its text is empty here: the
 *   run's transcription stage fills it in with the transcript (transcription/stage.ts).
 * - A .txt/.md file is a text document of its own, read as a text folder reads it: notes beside
 *   recordings are embedded in the same vector space.
 * - The walk (order, hidden entries, symlinks, FIFOs) is the text folder's.
 * - An unreadable, empty, oversized, corrupt or unsupported audio file is a reject naming it;
 *   nothing is skipped without a word.
 */
import { basename } from 'node:path';
import type { CorpusEntry } from '../domain.js';
import { UsageError } from '../errors.js';
import { isAudioFileName, isTextFileName } from '../files/file-kinds.js';
import { readAudioFile } from './audio.js';
import { reject, toEntry } from './entries.js';
import { readFound, type TextReadOptions, walkFolder } from './text-folder.js';

export interface AudioReadOptions extends TextReadOptions {
  /** A larger audio file is a reject, never read whole. */
  readonly maxAudioBytes: number;
}

export async function* readAudioFolder(options: AudioReadOptions): AsyncGenerator<CorpusEntry> {
  const found = await walkFolder(
    options.path,
    options.file,
    options.followSymlinks ?? false,
    (name) => isAudioFileName(name) || isTextFileName(name),
  );
  if (!found.some((item) => isAudioFileName(item.rel))) {
    throw new UsageError(`no .wav, .mp3, .flac, .ogg, .m4a or .webm audio files in folder ${options.file}`);
  }
  yield* readFound(found, options, (file) =>
    isAudioFileName(file.rel) ? readAudioDocument(file.abs, file.rel, file.rel, options) : undefined,
  );
}

/** One audio file as one document, its id the file's base name. */
export async function* readSingleAudio(options: AudioReadOptions): AsyncGenerator<CorpusEntry> {
  yield await readAudioDocument(options.path, options.file, basename(options.path), options);
}

async function readAudioDocument(
  path: string,
  file: string,
  id: string,
  options: AudioReadOptions,
): Promise<CorpusEntry> {
  const audio = await readAudioFile(path, file, options.maxAudioBytes, options.onBytes);
  if (typeof audio === 'string') return reject(file, 1, audio, id);
  return toEntry(options.ids, file, 1, id, '', { audio });
}
