// Peak RSS while embedding a large generated corpus (default 1 GB of JSONL prose; BENCH_MB to
// change it; BENCH_DOC_BYTES for the documents' size, default 20,000). embedpipe runs as a child
// process, its RSS sampled from /proc; the emulator runs in another child. Reports the peak (the
// kernel's high-water mark) and RSS at each decile of the run so a reader sees whether it stays flat.
// BENCH_RERUN=1: then the same command again, a nightly re-run of the unchanged corpus (every batch
// carried over, the switch checking the version and counting what changed), measured the same way.
// BENCH_RERUN_EDITS=N (with BENCH_RERUN=1): N documents spread through the corpus edited before the
// re-run, the usual nightly (a few batches sent, the rest carried).
// BENCH_REPEAT=N: N fresh runs of the corpus, each peak and their median (one run's peak varies by
// several MB: docs/benchmarks.md, a thirtieth session); a re-run follows the last.
// `npm run build && node bench/memory.bench.mjs`
import { once } from 'node:events';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rename, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { API_KEY, mb, median, runEmbedpipe, startGateway, writeJsonlCorpus } from './lib.mjs';

const megabytes = Number(process.env.BENCH_MB ?? 1024);
const documentBytes = Number(process.env.BENCH_DOC_BYTES ?? 20_000);
const repeats = Number(process.env.BENCH_REPEAT ?? 1);
const dir = await mkdtemp(join(tmpdir(), 'embedpipe-memory-'));
const gateway = await startGateway();
try {
  const corpus = join(dir, 'corpus.jsonl');
  const t0 = Date.now();
  const { documents, bytes } = await writeJsonlCorpus(corpus, megabytes * 1e6, documentBytes);
  console.log(
    `memory: generated ${mb(bytes)} MB, ${documents} documents in ${((Date.now() - t0) / 1000).toFixed(0)} s`,
  );
  const args = [
    '--input',
    corpus,
    '--model',
    'emu/embed-small',
    '--out',
    join(dir, 'out'),
    '--concurrency',
    '8',
  ];
  const env = { EMBEDPIPE_BASE_URL: gateway.baseUrl, EMBEDPIPE_API_KEY: API_KEY };
  const peaks = [];
  for (let i = 0; i < repeats; i++) {
    // Each a fresh run: the dataset of the one before is removed first.
    if (i > 0) await removeDataset();
    const run = await runEmbedpipe(args, env, { sampleMs: 500 });
    await report(repeats > 1 ? `fresh run ${i + 1} of ${repeats}: ` : '', run, bytes);
    peaks.push(run.peakRss);
  }
  if (repeats > 1)
    console.log(
      `memory: peak RSS of the ${repeats} fresh runs ${peaks.map(mb).join(', ')} MB, median ${mb(median(peaks))} MB`,
    );
  if (process.env.BENCH_RERUN === '1') {
    const edits = Number(process.env.BENCH_RERUN_EDITS ?? 0);
    if (edits > 0) await editSpread(corpus, documents, edits);
    const rerun = await runEmbedpipe(args, env, { sampleMs: 500 });
    await report(`the re-run (documents ${JSON.stringify(rerun.summary.changes)}): `, rerun, bytes);
  }
} finally {
  await gateway.stop();
  await rm(dir, { recursive: true, force: true });
}

/** Prints a run's vectors, files and rate (of `bytes` of corpus), its peak RSS and RSS by decile. */
async function report(label, { summary, samples, peakRss }, bytes) {
  // The peak is the kernel's high-water mark: a rise between two samples counts (samples missed the
  // moment a large run's switch held its peak: docs/benchmarks.md, a sixteenth session).
  const sampled = Math.max(...samples.map((s) => s.rss));
  // When the high-water mark was set (to a sample): the run's steady state, or a moment such as its switch.
  const reached = samples.find((s) => s.hwm === peakRss);
  const deciles = Array.from(
    { length: 10 },
    (_, i) => samples[Math.floor(((i + 1) / 10) * (samples.length - 1))],
  );
  const outBytes = (await Promise.all(summary.files.map((f) => stat(join(dir, 'out', f))))).reduce(
    (s, st) => s + st.size,
    0,
  );
  console.log(
    `memory: ${label}${summary.rows} vectors (${summary.dims} dims), ${summary.batches.planned} batches, ` +
      `${mb(outBytes)} MB of Parquet in ${(summary.elapsedMs / 1000).toFixed(0)} s ` +
      `(${mb(bytes / (summary.elapsedMs / 1000))} MB/s of corpus)`,
  );
  console.log(
    `memory: ${label}peak RSS ${mb(peakRss)} MB (VmHWM, set by ${(reached.t / 1000).toFixed(1)} s of ` +
      `${(samples[samples.length - 1].t / 1000).toFixed(1)}; highest sample ${mb(sampled)} MB); by decile: ${deciles.map((s) => mb(s.rss)).join(' ')} MB`,
  );
}

/** The output folder and its versions, as a fresh run finds them: not there. */
async function removeDataset() {
  await rm(join(dir, 'out'), { recursive: true, force: true });
  await rm(join(dir, 'out.versions'), { recursive: true, force: true });
}

/** Rewrites the corpus with `edits` of its `documents` (every k-th) given an extra sentence. */
async function editSpread(path, documents, edits) {
  const every = Math.max(1, Math.floor(documents / edits));
  const out = createWriteStream(`${path}.edited`);
  let n = 0;
  for await (const line of createInterface({ input: createReadStream(path), crlfDelay: Infinity })) {
    let next = line;
    if (n % every === every - 1 && line !== '') {
      const doc = JSON.parse(line);
      next = JSON.stringify({ ...doc, text: `${doc.text} Edited for the nightly run.` });
    }
    n += 1;
    if (!out.write(`${next}\n`)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
  await rename(`${path}.edited`, path);
}
