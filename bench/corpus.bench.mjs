/**
 * Corpus reader throughput: generates a ~100 MB CSV and JSONL corpus (1 KB documents, multi-line
 * quoted CSV fields, non-ASCII text) in a temp folder and reads each through openCorpus.
 *
 *   npm run build && node bench/corpus.bench.mjs [megabytes]
 *
 * Prints MB/s and documents/s per format. Not a test: numbers depend on the machine.
 */
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CorpusStats, openCorpus } from '../dist/corpus/index.js';

const MB = 1024 * 1024;
const targetBytes = Number(process.argv[2] ?? 100) * MB;
const text = 'Lorem ipsum dolor sit amet, "quoted", consectetur adipiscing — 日本語のテキスト 🎉 '.repeat(12);

const formats = {
  csv: { header: 'id,text\n', row: (i) => `doc-${i},"${text.replaceAll('"', '""')}\nsecond line"\n` },
  jsonl: { header: '', row: (i) => `${JSON.stringify({ id: `doc-${i}`, text })}\n` },
};

async function generate(path, { header, row }) {
  const out = createWriteStream(path);
  out.write(header);
  let written = Buffer.byteLength(header);
  for (let i = 0; written < targetBytes; ) {
    let block = '';
    for (let j = 0; j < 1000; j++) block += row(i++);
    written += Buffer.byteLength(block);
    if (!out.write(block)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

async function read(path) {
  const stats = new CorpusStats();
  const started = performance.now();
  for await (const entry of openCorpus({ path, idField: 'id', textField: 'text', stats })) {
    if (entry.kind === 'reject') throw new Error(`unexpected reject: ${JSON.stringify(entry.reject)}`);
  }
  const seconds = (performance.now() - started) / 1000;
  return { seconds, bytes: stats.bytesRead, documents: stats.documents };
}

const folder = await mkdtemp(join(tmpdir(), 'embedpipe-corpus-bench-'));
try {
  for (const [format, shape] of Object.entries(formats)) {
    const path = join(folder, `corpus.${format}`);
    await generate(path, shape);
    const { seconds, bytes, documents } = await read(path);
    console.log(
      `${format.padEnd(5)} ${(bytes / MB).toFixed(0)} MB, ${documents} documents: ` +
        `${(bytes / MB / seconds).toFixed(1)} MB/s, ${Math.round(documents / seconds)} documents/s`,
    );
  }
} finally {
  await rm(folder, { recursive: true, force: true });
}
