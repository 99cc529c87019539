// `npm run bench`: every benchmark in turn (numbers, not pass/fail). The memory benchmark runs on a
// 256 MB and a 4 GB corpus, three fresh runs of each (BENCH_MB per entry below; the 4 GB corpus takes
// ~1 minute to write and ~2.5 a run on 2 cores, and ~1 more for its nightly re-run with edits) and on 1 GB of short documents (and its nightly). BENCH_PLANNER_MB sets the planner benchmark's size (default 256 MB per corpus, three corpora, each on one core and on all).
import { spawnSync } from 'node:child_process';

const benches = [
  ['decode.bench.mjs'],
  ['decode.bench.mjs', '256'],
  ['chunker.bench.mjs'],
  ['corpus.bench.mjs', '100'],
  ['output.bench.mjs', '--parts', '40'],
  ['throughput.bench.mjs', '50', '8', '16'],
  ['throughput.bench.mjs', '50', '8', '32'],
  ['throughput.bench.mjs', '50', '4', '128'],
  // The two corpora the speed target names: three pairs each, in alternating order (medians).
  ['throughput.bench.mjs', '50', '8', '128', 'prose', { BENCH_PAIRS: '3' }],
  ['throughput.bench.mjs', '50', '8', '128', 'multilingual', { BENCH_PAIRS: '3' }],
  ['throughput.bench.mjs', '50', '8', '128', 'multilingual', { BENCH_MODEL: 'emu/embed-small' }],
  ['planner.bench.mjs'],
  // Planning's CPU in process, one core, five fresh processes each.
  ['produce.bench.mjs', 'prose', '5'],
  ['produce.bench.mjs', 'multilingual', '5'],
  ['incremental.bench.mjs'],
  ['compact.bench.mjs'],
  ['contract.bench.mjs'],
  // Memory flat in the corpus size: a 256 MB and a 4 GB corpus, three fresh runs of each (one run's
  // peak varies by several MB), their median beside each peak (about 10 minutes).
  ['memory.bench.mjs', { BENCH_MB: '256', BENCH_REPEAT: '3' }],
  // Then the usual nightly: 100 documents spread through the corpus edited, the same command again.
  ['memory.bench.mjs', { BENCH_MB: '4096', BENCH_REPEAT: '3', BENCH_RERUN: '1', BENCH_RERUN_EDITS: '100' }],
  // The state kept per document (ids, plan): 1 GB of ~500 B documents, 1.4M of them, and its
  // nightly (~3 minutes).
  [
    'memory.bench.mjs',
    { BENCH_MB: '1024', BENCH_DOC_BYTES: '500', BENCH_RERUN: '1', BENCH_RERUN_EDITS: '100' },
  ],
  // Workers at 500 ms latency: 1, 2 and 4 of them, measured at the gateway.
  ['workers.bench.mjs', '30000', '1,2,4'],
];
const hasTaskset = spawnSync('taskset', ['-c', '0', 'true']).status === 0;
for (const [file, ...rest] of benches) {
  // A trailing object is extra environment for that benchmark.
  const env = typeof rest.at(-1) === 'object' ? rest.pop() : {};
  const args = rest;
  console.log(
    `\n## ${file} ${args.join(' ')} ${Object.entries(env)
      .map(([k, v]) => `${k}=${v}`)
      .join(' ')}`,
  );
  // Throughput: the emulator on core 1, embedpipe, the SDK reference and the bare client on core 0
  // (a fair comparison on two cores), where taskset exists; planning's CPU on core 0 too.
  const pinned = file === 'throughput.bench.mjs' || file === 'produce.bench.mjs';
  const pin = pinned && hasTaskset ? ['taskset', '-c', '0'] : [];
  const argv = [...pin, process.execPath, new URL(file, import.meta.url).pathname, ...args];
  const run = spawnSync(argv[0], argv.slice(1), {
    stdio: 'inherit',
    env: { ...process.env, ...env, ...(pin.length > 0 ? { BENCH_PIN: '1' } : {}) },
  });
  if (run.status !== 0) process.exitCode = 1;
}
