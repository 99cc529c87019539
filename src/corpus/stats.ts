import type { WholeRead } from '../files/whole-read.js';

/**
 * Running totals of one corpus read, for progress and ETA displays. openCorpus updates the object
 * passed in `CorpusOptions.stats` as it goes; a display polls it (no events, no callbacks).
 */
export class CorpusStats {
  /** Documents yielded so far. */
  documents = 0;
  /** Rejects yielded so far. */
  rejects = 0;
  /** Bytes of input read from disk so far (counted when read, a little ahead of what was yielded). */
  bytesRead = 0;
  /** Size of the whole input in bytes (the file, or the folder's .txt/.md files); set when reading starts. */
  totalBytes: number | undefined = undefined;
  /**
   * A CSV or JSONL file read to its end: the sha256 and size of every byte read (what the manifest
   * records of the input). Undefined for folders and other formats, and while the read is not done.
   */
  wholeRead: WholeRead | undefined = undefined;
}
