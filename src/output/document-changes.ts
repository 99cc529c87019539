/**
 * What changed between two versions of a dataset, by document: a document is unchanged when its
 * rows hold the same chunk hashes in the same order (same model, same text, same chunking).
 *
 * Where both versions hold the `_documents.jsonl` their switch wrote (each document's rows and a
 * 64-bit digest of its chunk_index/content_hash pairs, contract.ts), the two records are compared
 * side by side: no data file is read, and only documents met out of step are held.
 * Otherwise (a version written before the contract) the data files' hash columns are read.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DocumentChanges } from '../domain.js';
import { OutputError } from '../errors.js';
import { readColumns, utf8Values } from './columns.js';
import type { DocumentDigest } from './contract.js';
import { type DocumentRecord, readDocumentRecords } from './documents-file.js';
import { DOCUMENTS_FILE } from './jsonl.js';
import type { OutputFormat } from './part-file.js';
import { HASH_COLUMN } from './table.js';

export type { DocumentChanges };

export interface VersionFiles {
  readonly dir: string;
  readonly files: readonly string[];
  readonly format: OutputFormat;
  /** Whether `dir` holds the version's `_documents.jsonl` (a switch that checked the contract wrote it). */
  readonly documentsRecord?: boolean;
}

export async function documentChanges(before: VersionFiles, after: VersionFiles): Promise<DocumentChanges> {
  if (before.documentsRecord && after.documentsRecord) {
    const counted = await changesByRecords(before.dir, after.dir);
    if (counted) return counted;
  }
  const old = await documentDigests(before);
  const now = await documentDigests(after);
  let added = 0;
  let changed = 0;
  let unchanged = 0;
  for (const [id, digest] of now) {
    const was = old.get(id);
    if (was === undefined) added += 1;
    else if (was === digest) unchanged += 1;
    else changed += 1;
  }
  let deleted = 0;
  for (const id of old.keys()) if (!now.has(id)) deleted += 1;
  return { added, changed, unchanged, deleted };
}

/**
 * What would change from the version in `versionDir` to a plan whose `_documents.jsonl` lines
 * `lines` gives (PlannedChunks.asPlanned): a dry run's preview of the next run, and, right after a
 * run, a check that its version holds the corpus (nothing added, changed or deleted). Undefined
 * when the version has no `_documents.jsonl` to compare with.
 */
export async function changesToPlan(
  versionDir: string,
  lines: (each: (bytes: Buffer) => void) => void,
): Promise<DocumentChanges | undefined> {
  const scratch = await mkdtemp(join(tmpdir(), 'embedpipe-plan-documents-'));
  try {
    const fd = openSync(join(scratch, DOCUMENTS_FILE), 'w');
    try {
      lines((bytes) => writeSync(fd, bytes));
    } finally {
      closeSync(fd);
    }
    return await changesByRecords(versionDir, scratch);
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/**
 * The counts from the two versions' `_documents.jsonl`; undefined when the earlier one is missing
 * or damaged (the data files then decide: the counts must not hold a switch back). Both list their
 * documents in the order they first appear in the files, which a re-run mostly keeps: they are read
 * side by side, and only documents met out of step wait in memory for their match. (Reading the
 * files' hashes instead holds every chunk's hash of both versions as strings: a large re-run's
 * peak, docs/benchmarks.md, "a twenty-second session".)
 */
async function changesByRecords(beforeDir: string, afterDir: string): Promise<DocumentChanges | undefined> {
  const before = new RecordCursor(readDocumentRecords(join(beforeDir, DOCUMENTS_FILE)));
  const after = new RecordCursor(readDocumentRecords(join(afterDir, DOCUMENTS_FILE)));
  const counts = { added: 0, changed: 0, unchanged: 0, deleted: 0 };
  const compare = (was: DocumentDigest, now: DocumentDigest) => {
    if (was.rows === now.rows && was.digest === now.digest) counts.unchanged += 1;
    else counts.changed += 1;
  };
  /** Documents read from one side whose match the other has not reached. */
  const waiting = { before: new Map<string, DocumentRecord>(), after: new Map<string, DocumentRecord>() };
  /** Pairs `record` with its match waiting on the other side, or makes it wait on its own. */
  const meet = (record: DocumentRecord, side: 'before' | 'after') => {
    const other = side === 'before' ? waiting.after : waiting.before;
    const match = other.get(record.id);
    if (match === undefined) waiting[side].set(record.id, record);
    else {
      other.delete(record.id);
      if (side === 'before') compare(record, match);
      else compare(match, record);
    }
  };
  try {
    for (;;) {
      try {
        await before.fill();
      } catch (error) {
        if (error instanceof OutputError || (error as NodeJS.ErrnoException).code === 'ENOENT')
          return undefined;
        throw error;
      }
      await after.fill();
      const old = before.take();
      const now = after.take();
      if (old === undefined && now === undefined) break;
      if (old && now && old.id === now.id) compare(old, now);
      else {
        if (old) meet(old, 'before');
        if (now) meet(now, 'after');
      }
    }
  } finally {
    await before.close();
    await after.close();
  }
  counts.added = waiting.after.size;
  counts.deleted = waiting.before.size;
  return counts;
}

/** The records of a `_documents.jsonl`, taken one by one from the pieces it is read in. */
class RecordCursor {
  readonly #pieces: AsyncGenerator<DocumentRecord[]>;
  #piece: DocumentRecord[] = [];
  #at = 0;
  #done = false;

  constructor(pieces: AsyncGenerator<DocumentRecord[]>) {
    this.#pieces = pieces;
  }

  /** Reads pieces until a record can be taken or the file ends; awaits nothing when one can already. */
  async fill(): Promise<void> {
    while (this.#at === this.#piece.length && !this.#done) {
      const next = await this.#pieces.next();
      if (next.done) this.#done = true;
      else {
        this.#piece = next.value;
        this.#at = 0;
      }
    }
  }

  /** The next record, or undefined at the end of the file (after `fill`). */
  take(): DocumentRecord | undefined {
    return this.#at < this.#piece.length ? this.#piece[this.#at++] : undefined;
  }

  async close(): Promise<void> {
    await this.#pieces.return(undefined);
  }
}

/** Document id → its chunk hashes in chunk order, joined. */
async function documentDigests({ dir, files, format }: VersionFiles): Promise<Map<string, string>> {
  const chunks = new Map<string, string[]>();
  for (const file of files) {
    const table = await readColumns(join(dir, file), format, ['id', 'chunk_index', HASH_COLUMN]);
    const idColumn = table.getChild('id');
    const indexColumn = table.getChild('chunk_index');
    const hashColumn = table.getChild(HASH_COLUMN);
    if (!idColumn || !indexColumn || !hashColumn) continue;
    // Each column's values at once, not a `.get(row)` per row and column.
    const ids = utf8Values(idColumn);
    const indexes = indexColumn.toArray() as ArrayLike<number | bigint>;
    const hashes = utf8Values(hashColumn);
    for (let row = 0; row < ids.length; row++) {
      const id = ids[row]!;
      let list = chunks.get(id);
      if (list === undefined) {
        list = [];
        chunks.set(id, list);
      }
      list[Number(indexes[row])] = hashes[row]!;
    }
  }
  const digests = new Map<string, string>();
  for (const [id, list] of chunks) digests.set(id, list.join(','));
  return digests;
}
