/**
 * `_documents.jsonl`, the switch's record of every document's rows (contract.ts documentLine), is
 * written and hashed a megabyte at a time: holding its digests, their text and its bytes at once
 * made the run's peak at the switch (docs/benchmarks.md, "Memory").
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { syncDirectory, TempFile } from './atomic.js';
import { type DocumentDigest, documentLine } from './contract.js';
import { DOCUMENTS_FILE } from './jsonl.js';

/** Characters of lines gathered before they are written. */
const PIECE = 2 ** 20;

/** Writes `dir/_documents.jsonl` atomically from `digests`; resolves with its sha256 (hex). */
export async function writeDocumentsFile(
  dir: string,
  digests: Iterable<[string, DocumentDigest]>,
): Promise<string> {
  const path = join(dir, DOCUMENTS_FILE);
  const file = await TempFile.create(path);
  const hash = createHash('sha256');
  try {
    let text = '';
    const flush = () => {
      const bytes = Buffer.from(text, 'utf8');
      hash.update(bytes);
      file.writeNow(bytes);
      text = '';
    };
    for (const [id, digest] of digests) {
      text += documentLine(id, digest);
      if (text.length >= PIECE) flush();
    }
    flush();
    await file.close();
    await file.moveTo(path);
  } catch (error) {
    await file.discard();
    throw error;
  }
  await syncDirectory(dir);
  return hash.digest('hex');
}
