// A nightly re-run: the prose corpus embedded once, then again after five documents at its start
// were deleted, ten changed and five added. Every batch after the deletion moves (new batch ids), so
// the second run reuses the dataset's vectors by content hash: how long that takes, and what it
// sends. `npm run build && node bench/incremental.bench.mjs [documents]`
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { API_KEY, runEmbedpipe, startGateway, writeJsonlCorpus } from './lib.mjs';

const documents = Number(process.argv[2] ?? 51_200);
const dir = await mkdtemp(join(tmpdir(), 'embedpipe-bench-incremental-'));
const gateway = await startGateway(['--latency', '50']);
try {
  const first = join(dir, 'corpus.jsonl');
  await writeJsonlCorpus(first, Infinity, 400, { maxDocuments: documents });
  const lines = (await readFile(first, 'utf8')).split('\n').filter(Boolean);
  const next = lines.slice(5).map((line, i) => {
    if (i % 5000 !== 0) return line;
    const doc = JSON.parse(line);
    return JSON.stringify({ ...doc, text: `${doc.text} Changed.` });
  });
  for (let k = 0; k < 5; k++)
    next.push(JSON.stringify({ id: `new-${k}`, text: `A new document, number ${k}.` }));
  const second = join(dir, 'corpus-next.jsonl');
  await writeFile(second, `${next.join('\n')}\n`);

  const env = { EMBEDPIPE_BASE_URL: gateway.baseUrl, EMBEDPIPE_API_KEY: API_KEY };
  const args = (input) => ['--input', input, '--model', 'emu/embed-small', '--out', join(dir, 'out')];
  for (const [label, input] of [
    ['first run', first],
    ['re-run, same corpus', first],
    ['re-run, 5 deleted at the start, 10 changed, 5 added', second],
  ]) {
    const started = performance.now();
    const { summary, cpuMs } = await runEmbedpipe(args(input), env, { sampleMs: 50 });
    const wall = (performance.now() - started) / 1000;
    console.log(
      `incremental: ${label}: ${wall.toFixed(2)} s wall, ${((cpuMs ?? 0) / 1000).toFixed(2)} CPU s; ` +
        `${summary.rows} rows, ${summary.reused} reused, ${summary.requests} requests` +
        (summary.changes ? `; changes ${JSON.stringify(summary.changes)}` : ''),
    );
  }
} finally {
  await gateway.stop();
  await rm(dir, { recursive: true, force: true });
}
