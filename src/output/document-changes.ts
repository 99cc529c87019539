/**
 * What changed between two versions of a dataset, by document: a document is unchanged when its
 * rows hold the same chunk hashes in the same order (same model, same text, same chunking).
 */
import { join } from 'node:path';
import type { DocumentChanges } from '../domain.js';
import { readColumns, utf8Values } from './columns.js';
import type { OutputFormat } from './part-file.js';
import { HASH_COLUMN } from './table.js';

export type { DocumentChanges };

export interface VersionFiles {
  readonly dir: string;
  readonly files: readonly string[];
  readonly format: OutputFormat;
}

export async function documentChanges(before: VersionFiles, after: VersionFiles): Promise<DocumentChanges> {
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
