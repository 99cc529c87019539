/** Shared helpers for the corpus tests: real files in a temp folder, entries in a compact shape. */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { type CorpusOptions, openCorpus } from '../../src/corpus/index.js';
import type { CorpusEntry } from '../../src/domain.js';
import { tempFolder as tempFolderNamed } from '../helpers/temp.js';

/** A fresh temp folder, removed after the test file. */
export function tempFolder(): Promise<string> {
  return tempFolderNamed('embedpipe-corpus-');
}

/** Writes a file (creating folders); strings are written as UTF-8. Returns its path. */
export async function put(folder: string, name: string, content: string | Uint8Array): Promise<string> {
  const path = join(folder, name);
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, content);
  return path;
}

/** Bytes from a mix of UTF-8 strings and raw byte values. */
export function bytes(...parts: (string | number[])[]): Buffer {
  return Buffer.concat(
    parts.map((part) => (typeof part === 'string' ? Buffer.from(part, 'utf8') : Buffer.from(part))),
  );
}

/** An entry without the noise: documents as {id, text, line}, rejects as {line, reason, id?}. */
export type Brief =
  | { doc: string; text: string; line: number }
  | { reject: string; line: number; id?: string };

export function brief(entry: CorpusEntry): Brief {
  if (entry.kind === 'document')
    return { doc: entry.document.id, text: entry.document.text, line: entry.document.line };
  const { reason, line, id } = entry.reject;
  return id === undefined ? { reject: reason, line } : { reject: reason, line, id };
}

export async function readAll(options: Partial<CorpusOptions> & { path: string }): Promise<CorpusEntry[]> {
  const entries: CorpusEntry[] = [];
  for await (const entry of openCorpus({ idField: 'id', textField: 'text', ...options })) entries.push(entry);
  return entries;
}

export async function readBrief(options: Partial<CorpusOptions> & { path: string }): Promise<Brief[]> {
  return (await readAll(options)).map(brief);
}
