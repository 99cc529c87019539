// Compaction benchmark: DuckDB's scan of a dataset of per-batch parts, before and after compacting
// it into large data files, and the compaction's own time and peak RSS (in a child process, so the
// peak is the compaction's alone). Default: 500,000 rows of 256-dim unit vectors and ~600 characters
// of prose each, 128 rows per part (3,907 parts). Run after `npx tsc -p tsconfig.build.json`:
//   node bench/compact.bench.mjs [--rows N] [--dims D] [--file-mb M] [--row-group-mb G] [--json]
//   node bench/compact.bench.mjs --sweep   # DuckDB's scan for several file and row-group sizes
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { link, mkdir, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DuckDBInstance } from '@duckdb/node-api';
import { compactParts, DatasetWriter } from '../dist/output/index.js';
import { mb, memoryOf, random, sentence } from './lib.mjs';

const ROWS_PER_PART = 128;
const RUN = { 'embedpipe.model': 'bench/model', 'embedpipe.plan': 'bench-plan', 'embedpipe.tool': 'bench' };

function option(args, name, fallback) {
  const at = args.indexOf(name);
  return at >= 0 ? Number(args[at + 1]) : fallback;
}

/** One part's batch: unit-length Gaussian vectors (like a real model's) and prose. */
function makeBatch(batchId, first, rows, dims, rand) {
  const chunks = [];
  const vectors = [];
  for (let i = 0; i < rows; i++) {
    let text = '';
    while (text.length < 600) text += `${sentence(rand)} `;
    chunks.push({
      documentId: `doc-${Math.floor((first + i) / 4)}`,
      index: (first + i) % 4,
      text,
      start: 0,
      end: text.length,
      bytes: text.length,
      tokens: Math.round(text.length / 4),
      hash: (first + i).toString(16).padStart(64, '0'),
    });
    const v = new Float32Array(dims);
    let norm = 0;
    for (let j = 0; j < dims; j++) {
      const g = Math.sqrt(-2 * Math.log(rand() || 1e-12)) * Math.cos(2 * Math.PI * rand());
      v[j] = g;
      norm += g * g;
    }
    norm = Math.sqrt(norm);
    for (let j = 0; j < dims; j++) v[j] /= norm;
    vectors.push(v);
  }
  return {
    batchId,
    model: 'bench/model',
    chunks,
    vectors,
    replanned: [],
    failures: [],
    usage: { promptTokens: 0, cost: 0, requests: 1, retries: 0 },
  };
}

/** Writes the parts the way the pipeline does (DatasetWriter, one per batch); returns their names in order. */
export async function writeParts(dir, rows, dims) {
  const writer = new DatasetWriter({ dir, format: 'parquet', metadata: RUN, dims });
  const rand = random(7);
  const parts = [];
  for (let first = 0, k = 0; first < rows; first += ROWS_PER_PART, k++) {
    const n = Math.min(ROWS_PER_PART, rows - first);
    const batchId = `b${String(k).padStart(6, '0')}`;
    const record = JSON.stringify({ rows: n, dims, cost: n * 1e-6, requests: 1, retries: 0, failures: [] });
    parts.push(
      (
        await writer.writePart(batchId, makeBatch(batchId, first, n, dims, rand), {
          'embedpipe.batch': record,
        })
      ).file,
    );
  }
  return parts;
}

async function folderBytes(dir) {
  let bytes = 0;
  for (const name of await readdir(dir)) bytes += (await stat(join(dir, name))).size;
  return bytes;
}

/** Best of 3 of a query (DuckDB does not cache Parquet footers by default, so each run reads them). */
async function bestOf3(db, sql) {
  const connection = await db.connect();
  try {
    let best = Infinity;
    let result;
    for (let i = 0; i < 3; i++) {
      const t0 = performance.now();
      result = (await connection.runAndReadAll(sql)).getRowObjectsJS()[0];
      best = Math.min(best, performance.now() - t0);
    }
    return { ms: Math.round(best), result };
  } finally {
    connection.closeSync();
  }
}

/** The scan (every vector decoded), and a count(*) alone (footers only: the per-file cost). */
async function duckScan(db, dir) {
  const glob = `read_parquet('${dir}/*.parquet')`;
  const scan = await bestOf3(db, `SELECT count(*) AS n, avg(len(embedding)) AS dims FROM ${glob}`);
  const count = await bestOf3(db, `SELECT count(*) AS n FROM ${glob}`);
  return { ms: scan.ms, rows: Number(scan.result.n), dims: Number(scan.result.dims), countMs: count.ms };
}

/** Runs the compaction in a child process: its wall time, CPU time and peak RSS are its own. */
async function compactInChild(dir, parts, fileMb, rowGroupMb) {
  const child = spawn(
    process.execPath,
    [process.argv[1], '--child', dir, String(fileMb), String(rowGroupMb)],
    {
      stdio: ['pipe', 'pipe', 'inherit'],
    },
  );
  child.stdin.end(JSON.stringify(parts));
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const [code] = await once(child, 'exit');
  if (code !== 0) throw new Error(`compaction child exited ${code}`);
  return JSON.parse(out);
}

async function child([dir, fileMb, rowGroupMb]) {
  let input = '';
  for await (const chunk of process.stdin) input += chunk;
  const parts = JSON.parse(input);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const result = await compactParts({
    dir,
    format: 'parquet',
    parts,
    targetFileBytes: Number(fileMb) * 2 ** 20,
    rowGroupBytes: Number(rowGroupMb) * 2 ** 20,
  });
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  console.log(
    JSON.stringify({
      ms: Math.round(ms),
      cpuMs: Math.round((cpu.user + cpu.system) / 1000),
      peakRssBytes: (await memoryOf('self')).hwm,
      files: result.files.map((f) => ({
        file: f.file,
        rows: f.rows,
        bytes: f.bytes,
        batches: f.batches.length,
      })),
    }),
  );
}

/** Hard links of the parts in a new folder: each setting compacts its own copy, the originals stay. */
async function linkCopy(from, to, parts) {
  await mkdir(to);
  for (const part of parts) await link(join(from, part), join(to, part));
}

async function rowGroups(db, dir) {
  const connection = await db.connect();
  try {
    const rows = (
      await connection.runAndReadAll(
        `SELECT count(DISTINCT (file_name, row_group_id)) AS groups,
                avg(row_group_num_rows) AS rows, avg(row_group_bytes) AS bytes
           FROM (SELECT DISTINCT file_name, row_group_id, row_group_num_rows, row_group_bytes
                   FROM parquet_metadata('${dir}/*.parquet'))`,
      )
    ).getRowObjectsJS()[0];
    return {
      groups: Number(rows.groups),
      rowsPerGroup: Math.round(Number(rows.rows)),
      bytesPerGroup: Number(rows.bytes),
    };
  } finally {
    connection.closeSync();
  }
}

export async function runCompactBench({
  rows = 500_000,
  dims = 256,
  fileMb = 256,
  rowGroupMb = 16,
  sweep = false,
} = {}) {
  const root = await mkdtemp(join(tmpdir(), 'embedpipe-compact-bench-'));
  const db = await DuckDBInstance.create(':memory:');
  try {
    const partsDir = join(root, 'parts');
    const t0 = performance.now();
    const parts = await writeParts(partsDir, rows, dims);
    const report = {
      rows,
      dims,
      rowsPerPart: ROWS_PER_PART,
      parts: parts.length,
      partsBytes: await folderBytes(partsDir),
      writePartsMs: Math.round(performance.now() - t0),
      scanParts: await duckScan(db, partsDir),
      settings: [],
    };
    const settings = sweep
      ? [
          [256, 8],
          [256, 16],
          [256, 32],
          [256, 64],
          [256, 128],
          [128, 32],
          [512, 32],
          [1024, 64],
        ]
      : [[fileMb, rowGroupMb]];
    for (const [i, [file, group]] of settings.entries()) {
      const dir = join(root, `compacted-${i}`);
      await linkCopy(partsDir, dir, parts);
      const compaction = await compactInChild(dir, parts, file, group);
      report.settings.push({
        fileMb: file,
        rowGroupMb: group,
        compaction,
        bytes: await folderBytes(dir),
        rowGroups: await rowGroups(db, dir),
        scan: await duckScan(db, dir),
      });
      await rm(dir, { recursive: true, force: true });
    }
    return report;
  } finally {
    db.closeSync();
    await rm(root, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const args = process.argv.slice(2);
  if (args[0] === '--child') {
    await child(args.slice(1));
  } else {
    const report = await runCompactBench({
      rows: option(args, '--rows', 500_000),
      dims: option(args, '--dims', 256),
      fileMb: option(args, '--file-mb', 256),
      rowGroupMb: option(args, '--row-group-mb', 16),
      sweep: args.includes('--sweep'),
    });
    if (args.includes('--json')) {
      console.log(JSON.stringify(report));
    } else {
      console.log(
        `compact: ${report.rows} rows x ${report.dims} dims in ${report.parts} parts (${mb(report.partsBytes)} MB, written in ${(report.writePartsMs / 1000).toFixed(0)} s); ` +
          `DuckDB count(*), avg(len(embedding)) over the parts: ${report.scanParts.ms} ms, count(*) alone ${report.scanParts.countMs} ms (best of 3)`,
      );
      for (const s of report.settings) {
        const c = s.compaction;
        console.log(
          `compact: files ≤${s.fileMb} MB, row groups ${s.rowGroupMb} MB → ${c.files.length} files (${mb(s.bytes)} MB), ` +
            `${s.rowGroups.groups} row groups (~${s.rowGroups.rowsPerGroup} rows, ${mb(s.rowGroups.bytesPerGroup)} MB); ` +
            `compaction ${(c.ms / 1000).toFixed(1)} s (CPU ${(c.cpuMs / 1000).toFixed(1)} s), peak RSS ${mb(c.peakRssBytes)} MB; ` +
            `DuckDB scan ${s.scan.ms} ms (${(report.scanParts.ms / s.scan.ms).toFixed(1)}x faster), count(*) ${s.scan.countMs} ms, ${s.scan.rows} rows`,
        );
      }
    }
  }
}
