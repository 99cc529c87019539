// `embedpipe sync` and `search`: a first sync of ROWS rows x 384 dims into PostgreSQL + pgvector
// (PGlite served over the wire in a child process, reached by `pg`) and into LanceDB, then an
// incremental sync after a 5% change (rows written, seconds), then `search` latency per target.
// Usage: node bench/sync.bench.mjs [ROWS=200000]
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { median } from './lib.mjs';

const ROWS = Number(process.argv[2] ?? 200_000);
const CLI = new URL('../dist/cli/main.js', import.meta.url).pathname;
const root = await mkdtemp(join(tmpdir(), 'embedpipe-sync-bench-'));
const out = join(root, 'out', 'docs');
const corpus = join(root, 'docs.jsonl');

/** One short document per row (one chunk each), mixed scripts. */
async function writeCorpus(changedEvery) {
  const lines = [];
  for (let i = 0; i < ROWS; i++) {
    const edited = changedEvery && i % changedEvery === 0 ? ' (edited)' : '';
    lines.push(
      JSON.stringify({
        id: `d${i}`,
        text: `Row ${i} about indexes, 東京 ${i % 97}, مرحبا ${i % 13}${edited}`,
      }),
    );
  }
  await writeFile(corpus, `${lines.join('\n')}\n`);
}

function cli(args) {
  const started = process.hrtime.bigint();
  const run = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', maxBuffer: 1 << 26 });
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  if (run.status !== 0) throw new Error(`embedpipe ${args.join(' ')}: exit ${run.status}\n${run.stderr}`);
  return { seconds, stdout: run.stdout };
}

/** PGlite + pgvector served on a free port by a child process (its own core's worth of CPU). */
async function startPostgres() {
  const child = spawn(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `
    import { PGlite } from '@electric-sql/pglite';
    import { vector } from '@electric-sql/pglite-pgvector';
    import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
    const db = await PGlite.create({ extensions: { vector } });
    const server = new PGLiteSocketServer({ db, port: 0, host: '127.0.0.1' });
    await server.start();
    console.log(server.getServerConn());
  `,
    ],
    { cwd: new URL('..', import.meta.url).pathname, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const address = await new Promise((resolve) => child.stdout.once('data', (d) => resolve(String(d).trim())));
  return { url: `postgres://postgres@${address}/postgres`, stop: () => child.kill() };
}

const postgres = await startPostgres();
const lance = `lancedb://${join(root, 'lance')}?table=docs`;
const pg = `${postgres.url}?table=docs`;
try {
  await writeCorpus(0);
  const embedded = cli([
    'run',
    '--input',
    corpus,
    '--model',
    'emu/embed-small',
    '--out',
    out,
    '--emulator',
    '--json',
  ]);
  console.log(`dataset: ${ROWS} rows x 384 dims embedded in ${embedded.seconds.toFixed(1)} s (emulator)`);
  for (const [name, url] of [
    ['pgvector (PGlite over pg)', pg],
    ['LanceDB', lance],
  ]) {
    const first = cli(['sync', out, '--to', url, '--json']);
    const report = JSON.parse(first.stdout);
    console.log(
      `${name}: first sync ${report.upserted} rows in ${first.seconds.toFixed(1)} s: ${Math.round(report.upserted / first.seconds)} rows/s`,
    );
  }
  await writeCorpus(20);
  cli(['run', '--input', corpus, '--model', 'emu/embed-small', '--out', out, '--emulator', '--json']);
  for (const [name, url] of [
    ['pgvector (PGlite over pg)', pg],
    ['LanceDB', lance],
  ]) {
    const next = cli(['sync', out, '--to', url, '--json']);
    const report = JSON.parse(next.stdout);
    console.log(
      `${name}: after a 5% change: ${report.upserted} rows written, ${report.deleted} deleted, ${report.unchanged} unchanged, ${next.seconds.toFixed(1)} s`,
    );
    const verified = cli(['sync', out, '--to', url, '--verify', '--json']);
    console.log(
      `${name}: verify ${JSON.parse(verified.stdout).equal ? 'equal' : 'DIFFERS'} in ${verified.seconds.toFixed(1)} s`,
    );
  }
  for (const [name, target] of [
    ['dataset folder (DuckDB)', out],
    ['pgvector', pg],
    ['LanceDB', lance],
  ]) {
    const times = [];
    for (let i = 0; i < 5; i++)
      times.push(
        cli(['search', target, `row ${i * 7} about indexes`, '-k', '10', '--emulator', '--json']).seconds,
      );
    console.log(
      `search ${name}: median ${(median(times) * 1000).toFixed(0)} ms per command (process start and the query's embedding included)`,
    );
  }
} finally {
  postgres.stop();
  await rm(root, { recursive: true, force: true });
}
