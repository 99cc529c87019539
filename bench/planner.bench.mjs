// Planner throughput: corpus → chunks → batches, as `embedpipe run --dry-run --emulator` does it (read,
// chunk, count tokens, plan requests; no embeddings). MB/s of corpus file, measured as the child's
// wall time minus the same command's on a 1-document corpus (process start-up, the in-process
// emulator, the model lookup), on one core (`taskset -c 0`) and on the whole machine.
//
//   npm run build && node bench/planner.bench.mjs [--json]
//
// Corpora: English prose (lib.mjs) with ~3 KB and ~40 KB documents, and the hostile multilingual
// one (multilingual.mjs), BENCH_PLANNER_MB each (default 256: with 64, the start-up subtracted
// is a large share of the wall time and the figures swing). BENCH_PLANNER_ARGS adds flags to every
// command (e.g. "--max-tokens 512 --max-inputs 64"); BENCH_PLANNER_MODEL sets the model
// (default emu/embed-large); BENCH_PLANNER_CORPORA picks corpora (prose,long,multilingual);
// BENCH_PLANNER_REPEAT runs each measurement that many times and keeps the fastest (default 1).
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mb, runEmbedpipe, writeJsonlCorpus } from './lib.mjs';
import { writeMultilingualCorpus } from './multilingual.mjs';

const megabytes = Number(process.env.BENCH_PLANNER_MB ?? 256);
const model = process.env.BENCH_PLANNER_MODEL ?? 'emu/embed-large';
const extraArgs = (process.env.BENCH_PLANNER_ARGS ?? '').split(/\s+/).filter(Boolean);
const repeat = Math.max(1, Number(process.env.BENCH_PLANNER_REPEAT ?? 1));
const STARTUP_RUNS = 3;
const json = process.argv.includes('--json');

const CORPORA = {
  prose: {
    label: 'prose, ~3 KB docs',
    write: (path, bytes, opts) => writeJsonlCorpus(path, bytes, 3000, opts),
  },
  long: {
    label: 'prose, ~40 KB docs',
    write: (path, bytes, opts) => writeJsonlCorpus(path, bytes, 40_000, opts),
  },
  multilingual: {
    label: 'multilingual (hostile)',
    write: (path, bytes, opts) => writeMultilingualCorpus(path, bytes, opts),
  },
};
const chosen = (process.env.BENCH_PLANNER_CORPORA ?? 'prose,long,multilingual')
  .split(',')
  .map((s) => s.trim());

const hasTaskset = spawnSync('taskset', ['-c', '0', 'true']).status === 0;
const MODES = [
  ...(hasTaskset ? [{ name: '1 core', prefix: ['taskset', '-c', '0'] }] : []),
  { name: 'all cores', prefix: [] },
];

const dir = await mkdtemp(join(tmpdir(), 'embedpipe-bench-planner-'));

/** One dry run: wall ms (spawn to exit), the summary, peak RSS. */
async function dryRun(input, prefix) {
  const started = performance.now();
  const { summary, peakRss } = await runEmbedpipe(
    ['--dry-run', '--emulator', '--input', input, '--model', model, '--out', join(dir, 'out'), ...extraArgs],
    {},
    { prefix },
  );
  const wallMs = performance.now() - started;
  if (summary.status !== 'dry-run') throw new Error(`expected a dry run, got ${summary.status}`);
  return { wallMs, summary, peakRss };
}

async function fastest(runs, input, prefix) {
  let best;
  for (let i = 0; i < runs; i++) {
    const run = await dryRun(input, prefix);
    if (!best || run.wallMs < best.wallMs) best = run;
  }
  return best;
}

const rows = [];
try {
  for (const key of chosen) {
    const corpus = CORPORA[key];
    if (!corpus) throw new Error(`unknown corpus ${key}; known: ${Object.keys(CORPORA).join(', ')}`);
    const big = join(dir, `${key}.jsonl`);
    const one = join(dir, `${key}-1.jsonl`);
    const written = await corpus.write(big, megabytes * 1e6, { seed: 1 });
    const single = await corpus.write(one, Infinity, { seed: 1, maxDocuments: 1 });
    for (const mode of MODES) {
      const startup = await fastest(STARTUP_RUNS, one, mode.prefix);
      const run = await fastest(repeat, big, mode.prefix);
      const s = run.summary;
      // The summary's estimate is a decimal string (costUsd), exact to the provider's pricing.
      const cost = Number(s.costUsd);
      const seconds = (run.wallMs - startup.wallMs) / 1000;
      const row = {
        corpus: corpus.label,
        mode: mode.name,
        MB: +mb(written.bytes),
        'MB/s': +((written.bytes - single.bytes) / 1e6 / seconds).toFixed(2),
        documents: s.documents,
        rejects: s.rejects,
        chunks: s.chunks,
        tokens: s.tokens,
        requests: s.batches.planned,
        'cost USD': +cost.toFixed(4),
        'wall s': +(run.wallMs / 1000).toFixed(2),
        'start-up s': +(startup.wallMs / 1000).toFixed(2),
        'peak RSS MB': Math.round(run.peakRss / 2 ** 20),
      };
      rows.push(row);
      if (!json) {
        console.log(
          `planner: ${row.corpus}, ${mode.name}: ${row.MB} MB in ${seconds.toFixed(2)} s after start-up = ${row['MB/s']} MB/s; ` +
            `${s.documents} documents, ${s.rejects} rejected, ${s.chunks} chunks, ${s.tokens} tokens, ` +
            `${s.batches.planned} requests, estimated $${cost.toFixed(4)}`,
        );
      }
    }
    await rm(big, { force: true });
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
if (json) {
  console.log(JSON.stringify({ model, megabytes, extraArgs, rows }));
} else {
  console.log(
    `planner bench: ${model}${extraArgs.length ? ` ${extraArgs.join(' ')}` : ''}, ${hasTaskset ? '' : 'no taskset: '}` +
      `MB/s = (corpus − 1-document corpus) bytes / (wall − start-up wall)`,
  );
  console.table(rows);
}
