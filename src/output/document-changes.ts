/**
 * What changed between two versions of a dataset, by document: a document is unchanged when its
 * rows hold the same chunk hashes in the same order (same model, same text, same chunking).
 *
 * Where both versions hold the `_documents.jsonl` their switch wrote (each document's rows and a
 * 64-bit digest of its chunk_index/content_hash pairs, contract.ts), the two records are compared:
 * no data file is read, and what is held is one number per document of the earlier version.
 * Otherwise (a version written before the contract) the data files' hash columns are read.
 */
import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { DocumentChanges } from '../domain.js';
import { OutputError } from '../errors.js';
import { readColumns, utf8Values } from './columns.js';
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
 * The counts from the two versions' `_documents.jsonl`; undefined when the earlier one is missing
 * or damaged (the data files then decide: the counts must not hold a switch back). Reading the
 * files' hashes instead held every chunk's hash of both versions as strings: ~1 GB of RSS at 3M
 * rows (docs/benchmarks.md, "a twenty-second session").
 */
async function changesByRecords(beforeDir: string, afterDir: string): Promise<DocumentChanges | undefined> {
  const old = new Map<string, number>();
  try {
    for await (const [id, digest] of documentRecords(join(beforeDir, DOCUMENTS_FILE))) old.set(id, digest);
  } catch (error) {
    if (error instanceof OutputError || (error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  let added = 0;
  let changed = 0;
  let unchanged = 0;
  for await (const [id, digest] of documentRecords(join(afterDir, DOCUMENTS_FILE))) {
    const was = old.get(id);
    if (was === undefined) {
      added += 1;
      continue;
    }
    old.delete(id);
    if (was === digest) unchanged += 1;
    else changed += 1;
  }
  return { added, changed, unchanged, deleted: old.size };
}

const DIGEST = /^[0-9a-f]{16}$/;

/**
 * A `_documents.jsonl`'s documents, a line at a time: each id with its digest's first 52 bits (a
 * number; two documents' digests agree there by chance with odds of ~2^-52).
 */
async function* documentRecords(path: string): AsyncGenerator<[string, number]> {
  const lines = createInterface({ input: createReadStream(path), crlfDelay: Number.POSITIVE_INFINITY });
  let number = 0;
  for await (const line of lines) {
    number += 1;
    if (line.trim() === '') continue;
    let record: { id?: unknown; digest?: unknown } | null;
    try {
      record = JSON.parse(line) as typeof record;
    } catch {
      record = null;
    }
    if (typeof record?.id !== 'string' || typeof record.digest !== 'string' || !DIGEST.test(record.digest))
      throw new OutputError(`${path}, line ${number}: not a document record ({"id", "rows", "digest"})`);
    yield [record.id, Number.parseInt(record.digest.slice(0, 13), 16)];
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
