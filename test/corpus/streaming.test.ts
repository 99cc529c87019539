/**
 * Streaming: reading a ~50 MB corpus must not hold it. Heap and RSS are sampled while reading;
 * their growth has to stay far below the file size (the id registry and stream buffers remain).
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import v8 from 'node:v8';
import vm from 'node:vm';
import { describe, expect, it } from 'vitest';
import { CorpusStats, openCorpus } from '../../src/corpus/index.js';
import { tempFolder } from './helpers.js';

const folder = await tempFolder();
const TARGET_BYTES = 50 * 1024 * 1024;
const MB = 1024 * 1024;
const run = promisify(execFile);

/**
 * Writes rows of about 1 KB until the file reaches TARGET_BYTES and prints the row count. Runs in
 * a child process so that the generator's garbage does not inflate this process's RSS baseline.
 */
const GENERATOR = `
const { writeFileSync, appendFileSync } = require('node:fs');
const [path, format, target] = process.argv.slice(1);
const text = 'Lorem ipsum dolor sit amet, "quoted", 日本語 🎉 '.repeat(20);
const csvText = '"' + text.replaceAll('"', '""') + '\\n2nd line"';
writeFileSync(path, format === 'csv' ? 'id,text\\n' : '');
let written = 0, rows = 0;
while (written < Number(target)) {
  let block = '';
  for (let i = 0; i < 1000; i++, rows++) {
    block += format === 'csv' ? 'doc-' + rows + ',' + csvText + '\\n' : JSON.stringify({ id: 'doc-' + rows, text }) + '\\n';
  }
  appendFileSync(path, block);
  written += Buffer.byteLength(block);
}
console.log(rows);
`;

async function generate(path: string, format: 'csv' | 'jsonl'): Promise<number> {
  const { stdout } = await run(process.execPath, ['-e', GENERATOR, path, format, String(TARGET_BYTES)]);
  return Number(stdout.trim());
}

// A real gc() makes "retained" measurable: without it heapUsed mostly shows garbage not yet collected.
v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

interface Measured {
  documents: number;
  /** Largest growth of heap + buffers after a full GC, sampled while reading: what the reader holds. */
  retained: number;
  /** Largest growth of the resident set, sampled after the same collections (allocator slack included). */
  rss: number;
}

async function measure(path: string): Promise<Measured> {
  gc();
  const before = process.memoryUsage();
  let retained = 0;
  let rss = 0;
  const stats = new CorpusStats();
  for await (const entry of openCorpus({ path, idField: 'id', textField: 'text', stats })) {
    if (entry.kind !== 'document') throw new Error(JSON.stringify(entry));
    // Every ~2 MB of input: collect, then see what is still held.
    if (stats.documents % 2000 === 0) {
      gc();
      const now = process.memoryUsage();
      retained = Math.max(retained, now.heapUsed + now.arrayBuffers - before.heapUsed - before.arrayBuffers);
      rss = Math.max(rss, now.rss - before.rss);
    }
  }
  expect(stats.bytesRead).toBe(stats.totalBytes);
  console.log(`${path}: retained +${(retained / MB).toFixed(1)} MB, peak RSS +${(rss / MB).toFixed(1)} MB`);
  return { documents: stats.documents, retained, rss };
}

describe('streaming', () => {
  it('reads a 50 MB JSONL file with memory growth far below its size', async () => {
    const path = join(folder, 'big.jsonl');
    const rows = await generate(path, 'jsonl');
    const result = await measure(path);
    expect(result.documents).toBe(rows);
    expect(result.retained).toBeLessThan(12 * MB);
    expect(result.rss).toBeLessThan(TARGET_BYTES);
  });

  it('reads a 50 MB CSV file with memory growth far below its size', async () => {
    const path = join(folder, 'big.csv');
    const rows = await generate(path, 'csv');
    const result = await measure(path);
    expect(result.documents).toBe(rows);
    expect(result.retained).toBeLessThan(12 * MB);
    expect(result.rss).toBeLessThan(TARGET_BYTES);
  });
});
