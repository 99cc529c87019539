/**
 * `_documents.jsonl`, the switch's record of every document's rows (contract.ts documentLine), is
 * written and hashed a megabyte at a time: holding its digests, their text and its bytes at once
 * made the run's peak at the switch (docs/benchmarks.md, "Memory"). A document at a time, so the
 * switch's check can write it in the pass that digests the plan (finalize.ts, checkedByDigest).
 * Lines are encoded into one reused buffer: joined as a string, each megabyte was a rope of tens
 * of thousands of strings that lived long enough to be promoted, garbage for the next full GC.
 */
import { createHash, type Hash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { OutputError } from '../errors.js';
import { syncDirectory, TempFile } from './atomic.js';
import { DIGEST_HEX, type DocumentDigest, documentLine } from './contract.js';
import { DOCUMENTS_FILE } from './jsonl.js';

/** Bytes of lines gathered before they are written. */
const PIECE = 2 ** 20;
/** UTF-8 bytes a UTF-16 code unit can take at most. */
const MAX_BYTES_PER_UNIT = 3;

/** `dir/_documents.jsonl` being written: `add` each document, then `finish` (or `discard`). */
export class DocumentsFile {
  readonly #dir: string;
  readonly #file: TempFile;
  readonly #hash: Hash = createHash('sha256');
  readonly #piece = Buffer.allocUnsafe(PIECE);
  #used = 0;

  private constructor(dir: string, file: TempFile) {
    this.#dir = dir;
    this.#file = file;
  }

  static async create(dir: string): Promise<DocumentsFile> {
    return new DocumentsFile(dir, await TempFile.create(join(dir, DOCUMENTS_FILE)));
  }

  add(id: string, digest: DocumentDigest): void {
    const line = documentLine(id, digest);
    const most = line.length * MAX_BYTES_PER_UNIT;
    if (this.#used + most > PIECE) this.#flush();
    if (most > PIECE) this.#write(Buffer.from(line, 'utf8'));
    else this.#used += this.#piece.write(line, this.#used, 'utf8');
  }

  /** Lines as `add` writes them, already encoded (a plan's, output/planned-chunks.ts). */
  addLines(bytes: Buffer): void {
    this.#flush();
    this.#write(bytes);
  }

  /** Puts the file in place atomically; resolves with its sha256 (hex). */
  async finish(): Promise<string> {
    try {
      this.#flush();
      await this.#file.close();
      await this.#file.moveTo(join(this.#dir, DOCUMENTS_FILE));
    } catch (error) {
      await this.#file.discard();
      throw error;
    }
    await syncDirectory(this.#dir);
    return this.#hash.digest('hex');
  }

  async discard(): Promise<void> {
    await this.#file.discard();
  }

  #flush(): void {
    if (this.#used === 0) return;
    this.#write(this.#piece.subarray(0, this.#used));
    this.#used = 0;
  }

  #write(bytes: Buffer): void {
    this.#hash.update(bytes);
    this.#file.writeNow(bytes);
  }
}

/** Writes `dir/_documents.jsonl` atomically from `digests`; resolves with its sha256 (hex). */
export async function writeDocumentsFile(
  dir: string,
  digests: Iterable<[string, DocumentDigest]>,
): Promise<string> {
  const file = await DocumentsFile.create(dir);
  try {
    for (const [id, digest] of digests) file.add(id, digest);
  } catch (error) {
    await file.discard();
    throw error;
  }
  return file.finish();
}

/** One line of `_documents.jsonl`. */
export interface DocumentRecord extends DocumentDigest {
  readonly id: string;
}

/**
 * A line as the writer lays it out (contract.ts documentLine) with an id that needs no escape: read
 * by one match, several times faster than JSON.parse. Any other line is parsed as JSON.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: a JSON string holds no raw control character.
const WRITTEN_LINE = /^\{"id":"([^"\\\u0000-\u001f]*)","rows":(0|[1-9]\d*),"digest":"([0-9a-f]{16})"\}$/;

/**
 * The documents of a `_documents.jsonl` at `path`, the records of each piece of the file read (never
 * the whole text; a record at a time through an async generator was most of the cost of reading
 * the file: docs/benchmarks.md, "a twenty-fourth session"), each line checked; `onBytes` sees the
 * file's bytes as read (to hash them). Throws OutputError naming the line that is not a document
 * record.
 */
export async function* readDocumentRecords(
  path: string,
  onBytes?: (bytes: Buffer) => void,
): AsyncGenerator<DocumentRecord[]> {
  const decoder = new StringDecoder('utf8');
  let rest = '';
  let number = 0;
  const parsed = (line: string): DocumentRecord | undefined => {
    number += 1;
    const written = WRITTEN_LINE.exec(line);
    if (written) return { id: written[1]!, rows: Number(written[2]), digest: written[3]! };
    if (line.trim() === '') return undefined;
    let record: { id?: unknown; rows?: unknown; digest?: unknown } | null;
    try {
      record = JSON.parse(line) as typeof record;
    } catch {
      record = null;
    }
    if (
      typeof record?.id !== 'string' ||
      !Number.isInteger(record.rows) ||
      typeof record.digest !== 'string' ||
      !DIGEST_HEX.test(record.digest)
    )
      throw new OutputError(`${path}, line ${number}: not a document record ({"id", "rows", "digest"})`);
    return { id: record.id, rows: record.rows as number, digest: record.digest };
  };
  const recordsOf = (lines: readonly string[]): DocumentRecord[] => {
    const records: DocumentRecord[] = [];
    for (const line of lines) {
      const record = parsed(line);
      if (record) records.push(record);
    }
    return records;
  };
  for await (const chunk of createReadStream(path)) {
    onBytes?.(chunk as Buffer);
    const lines = (rest + decoder.write(chunk as Buffer)).split('\n');
    rest = lines.pop()!;
    yield recordsOf(lines);
  }
  yield recordsOf([rest + decoder.end()]);
}
