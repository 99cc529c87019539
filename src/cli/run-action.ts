/** What `embedpipe run` does; loaded only when the command runs (see run.ts). */
import { readFile } from 'node:fs/promises';
import { isAbsolute, join, relative } from 'node:path';
import { readEnvironment } from '../config/env.js';
import { type RunFlags, readJobFile, resolveRunSettings } from '../config/settings.js';
import type { RunningEmulator } from '../emulator/index.js';
import {
  ExitCode,
  InterruptedError,
  MissingKeyError,
  NothingEmbeddedError,
  RunStoppedError,
} from '../errors.js';
import { createLogger, type Logger } from '../observability/logger.js';
import { holdMemoryTarget } from '../observability/memory-target.js';
import { progressIntervalFrom, retryAfterReporter, startProgress } from '../observability/progress.js';
import { RunStats } from '../observability/stats.js';
import { FAILURES_FILE, REJECTS_FILE } from '../output/index.js';
import { type RunSummary, runPipeline } from '../pipeline/run.js';
import type { SyncReport } from '../stores/sync.js';
import { printJson } from './format.js';
import { createGateway } from './gateway-edge.js';

export interface RunCommandFlags extends RunFlags {
  json?: boolean;
}

export async function runAction(jobPath: string | undefined, flags: RunCommandFlags): Promise<void> {
  const env = readEnvironment();
  const job = await readJobFile(jobPath);
  const settings = resolveRunSettings(flags, job, env);
  const logger = createLogger({ ...(env.logLevel ? { level: env.logLevel } : {}) });

  let emulator: RunningEmulator | undefined;
  let baseUrl = settings.baseUrl;
  let apiKey = env.apiKey;
  if (settings.emulator) {
    const { EMULATOR_API_KEY, startEmulator } = await import('../emulator/index.js');
    emulator = await startEmulator({ recordRequests: false });
    baseUrl = emulator.baseUrl;
    apiKey = EMULATOR_API_KEY;
    logger.info({ baseUrl }, 'started the local gateway emulator');
  } else if (!apiKey) {
    throw new MissingKeyError('EMBEDPIPE_API_KEY', ' (or pass --emulator to use the local gateway emulator)');
  }

  const stats = new RunStats();
  const client = createGateway({ ...settings, baseUrl }, env, {
    ...(apiKey ? { apiKey } : {}),
    onRetryAfter: retryAfterReporter(stats, logger),
  });
  stats.pacing = () => client.pacing;
  const controller = new AbortController();
  const interrupt = () =>
    controller.abort(
      new InterruptedError('interrupted; finished batches are kept: re-run the same command to resume'),
    );
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);
  const progress = startProgress(stats, { logger, intervalMs: progressIntervalFrom() });
  const memory = holdMemoryTarget(settings.memoryTargetMb, logger);
  let summary: RunSummary;
  try {
    summary = await runPipeline(settings, {
      client,
      logger,
      stats,
      signal: controller.signal,
      ...(env.minFreeBytes !== undefined ? { minFreeBytes: env.minFreeBytes } : {}),
    });
  } catch (error) {
    // A run that stopped (Ctrl-C, 402, --max-cost…) still reports what it did: cron and alerting
    // read the JSON; the reason goes to stderr with its exit code.
    if (error instanceof RunStoppedError) {
      const stopped = error.summary as RunSummary;
      if (flags.json) printJson(stopped);
      else process.stdout.write(describeSummary(stopped));
      throw error.reason;
    }
    throw error;
  } finally {
    progress.stop();
    memory.stop();
    process.off('SIGINT', interrupt);
    process.off('SIGTERM', interrupt);
    await client.close();
    await emulator?.close();
  }
  const synced = await syncAfterSwitch(summary, settings.syncTo, logger);
  const shown = synced?.report ? { ...summary, sync: synced.report } : summary;
  if (flags.json) printJson(shown);
  else process.stdout.write(describeSummary(shown));
  if (synced?.error) throw synced.error;
  if (summary.documents === 0) throw await nothingEmbedded(summary, settings.input);
  if (summary.status === 'incomplete') process.exitCode = ExitCode.batchesFailed;
  if (summary.status === 'held') process.exitCode = ExitCode.switchHeld;
}

/** A run that found no document to embed: every row rejected (_rejects.jsonl says why), or none at all. */
async function nothingEmbedded(s: RunSummary, input: string): Promise<NothingEmbeddedError> {
  if (s.rejects === 0)
    return new NothingEmbeddedError(`nothing to embed: ${shortPath(input)} holds no document`);
  const sideFolder = s.version?.dir ?? s.outDir;
  const rejects = join(shortPath(sideFolder), REJECTS_FILE);
  if (s.status === 'dry-run') {
    return new NothingEmbeddedError(
      `nothing to embed: all ${s.rejects} input rows of ${shortPath(input)} would be rejected ` +
        `(a real run lists each with its reason in ${REJECTS_FILE}); check --format, --id-field and --text-field`,
    );
  }
  let first = '';
  try {
    const line = (await readFile(join(sideFolder, REJECTS_FILE), 'utf8')).split('\n', 1)[0] ?? '';
    const reason = (JSON.parse(line) as { reason?: unknown }).reason;
    if (typeof reason === 'string') first = ` (the first: ${reason})`;
  } catch {
    // The file names every reason anyway.
  }
  return new NothingEmbeddedError(
    `nothing embedded: all ${s.rejects} input rows of ${shortPath(input)} were rejected${first}; ` +
      `see ${rejects}, and check --format, --id-field and --text-field`,
  );
}

/** The chunk budget used, and why. */
function describeSizing(s: RunSummary): string {
  const sizing = s.sizing;
  if (!sizing) return '';
  const why: Record<string, string> = {
    'byte-bound': 'no usage seen yet: at most one token per UTF-8 byte',
    probes: 'learned from calibration probes',
    usage: "raised by the gateway's reported usage",
    cut: 'raised after the gateway cut an input',
    rejection: 'raised after the gateway rejected an input as too long',
    limit: 'the limit a rejection named',
  };
  const probes = sizing.calibration ? `; ${sizing.calibration.requests} calibration requests` : '';
  const weights = Object.entries(sizing.tokensPerChar)
    .map(([name, weight]) => `${name} ${weight.toFixed(2)}`)
    .join(', ');
  return (
    `  chunks: up to ${sizing.budgetTokens} gateway tokens, estimated per character as ${weights} ` +
    `(${why[sizing.basis] ?? sizing.basis}${probes})`
  );
}

/** Dry run: what a real run would send, less what the dataset holds and texts repeated in the corpus. */
function describeToSend(s: RunSummary, out: string): string {
  const send = s.toSend;
  if (!send || send.chunks === s.chunks) return '';
  const repeated =
    send.repeated > 0
      ? `  ${send.repeated} chunks repeat the text of an earlier one: each text is sent once\n`
      : '';
  if (send.held === 0)
    return `${repeated}  a run would send ${send.chunks} chunks in about ${send.requests} requests, about ${send.tokens} tokens; estimated cost $${send.cost.toFixed(6)}\n`;
  if (send.chunks === 0) {
    if ((s.transcription?.estimate?.files ?? 0) > 0)
      return `${repeated}  ${out} already holds every chunk planned: a run would embed only the new transcripts\n`;
    return `${repeated}  ${out} already holds every chunk: a re-run would send nothing ($0)\n`;
  }
  return (
    `${repeated}  ${out} already holds ${send.held} of ${s.chunks} chunks: a re-run would send ` +
    `${send.chunks} chunks in about ${send.requests} requests, about ${send.tokens} tokens; estimated cost $${send.cost.toFixed(6)}\n`
  );
}

/** A dry run: the documents a run would add, change and delete in the dataset's current version. */
function describeChanges(s: RunSummary, out: string): string {
  const c = s.changes;
  if (!c) return '';
  const none = c.added + c.changed + c.deleted === 0;
  return (
    `  documents against ${out}'s current version: ${c.added} added, ${c.changed} changed, ` +
    `${c.unchanged} unchanged, ${c.deleted} deleted${none ? ' (it holds this corpus)' : ''}\n`
  );
}

/** Audio corpora: what was transcribed, reused and paid (a dry run: what would be). */
function describeTranscription(s: RunSummary): string[] {
  const t = s.transcription;
  if (!t) return [];
  const e = t.estimate;
  if (e) {
    const length =
      e.files === 0
        ? ''
        : `: ${e.seconds.toFixed(1)} s of audio${e.estimatedFiles > 0 ? ` (${e.estimatedFiles} estimated from the bitrate)` : ''}` +
          (e.unknownFiles > 0 ? `, and ${e.unknownFiles} files of unknown length` : '');
    const cost =
      e.files === 0
        ? ''
        : e.cost !== undefined
          ? `; estimated cost $${e.cost.toFixed(6)}${e.unknownFiles > 0 ? ' plus the files of unknown length' : ''} ` +
            `at $${e.pricePerMinute!.toFixed(4)}/min (${e.priceSource === 'setting' ? '--stt-price-per-minute' : "what this dataset's transcripts were billed"})`
          : '; cost unknown (the gateway publishes no transcription price: pass --stt-price-per-minute)';
    const held = e.held > 0 ? `; ${e.held} transcripts the dataset holds are planned as text above` : '';
    return [
      `  transcription with ${t.model}: ${e.files} audio files to transcribe${length}${cost}` +
        (e.files > 0 ? ' (not in the chunks and tokens above: their text is known once transcribed)' : '') +
        held,
    ];
  }
  const lines = [
    `  transcription with ${t.model}: ${t.files} audio files, ${t.transcribed} transcribed ` +
      `(${t.seconds.toFixed(1)} s of audio, $${t.cost.toFixed(6)}, ${t.requests} requests, ${t.retries} retries), ` +
      `${t.reused} transcripts reused from the dataset`,
  ];
  if (t.failed > 0) {
    lines.push(
      `  ${t.failed} audio files could not be transcribed (retries ran out): see ${FAILURES_FILE}; re-run to transcribe them`,
    );
  }
  return lines;
}

/** What the run saved and what changed since the version it replaced. */
function describeIncremental(s: RunSummary): string[] {
  const lines: string[] = [];
  if (s.reused > 0 || s.deduplicated > 0) {
    lines.push(
      `  reused ${s.reused} chunks from the dataset, ${s.deduplicated} duplicate texts embedded once: ` +
        `about ${s.saved.tokens} tokens ($${s.saved.cost.toFixed(6)}) not paid again`,
    );
  }
  const c = s.changes;
  if (c) {
    lines.push(
      `  documents since ${s.version?.replaces}: ${c.added} added, ${c.changed} changed, ${c.unchanged} unchanged, ${c.deleted} deleted`,
    );
  }
  const v = s.version;
  if (v?.current) {
    lines.push(
      `  dataset version ${v.name} is now current${v.pruned?.length ? ` (removed ${v.pruned.join(', ')})` : ''}`,
    );
  } else if (v && s.status === 'held') {
    lines.push(
      `  version ${v.name} is finished and verified, but --switch-if held it back; readers still see the previous version`,
    );
  } else if (v && s.status !== 'dry-run') {
    lines.push(`  version ${v.name} is unfinished; readers still see the previous version`);
  }
  return lines;
}

/** A run over --max-cost: what is left. */
function describeRemaining(s: RunSummary): string[] {
  const r = s.remaining;
  if (!r) return [];
  const t = r.transcription;
  const audio =
    t && t.files > 0
      ? `, and ${t.files} audio files to transcribe (${t.seconds.toFixed(1)} s${t.cost !== undefined ? `, estimated $${t.cost.toFixed(6)}` : ''})`
      : '';
  return [
    `  left to embed: ${r.chunks} chunks, about ${r.tokens} tokens, estimated $${r.cost.toFixed(6)}${audio}; ` +
      're-run with a higher --max-cost to continue',
  ];
}

/** A path as short as it can be said from here (relative when inside the working folder). */
function shortPath(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : path;
}

function describeSummary(s: RunSummary): string {
  const out = shortPath(s.outDir);
  const usd = `$${s.cost.toFixed(6)}`;
  if (s.status === 'dry-run') {
    const bound = s.sizing?.basis === 'byte-bound';
    return (
      `dry run for ${s.model}: ${s.documents} documents, ${s.rejects} rejected, ${bound ? 'at most ' : ''}${s.chunks} chunks, ` +
      `${bound ? 'at most ' : 'about '}${s.tokens} tokens in ${s.batches.planned} requests; estimated cost ` +
      `${bound ? 'at most ' : ''}${usd}\n${describeTranscription(s)
        .map((line) => `${line}\n`)
        .join('')}${describeToSend(s, out)}${describeChanges(s, out)}${describeSizing(s)}\n` +
      (bound
        ? '  (no calibration yet: these are upper bounds, planned with one token per UTF-8 byte; a real run first measures how the gateway counts and usually makes fewer, larger chunks)\n'
        : '')
    );
  }
  const head =
    s.status === 'done'
      ? 'done'
      : s.status === 'stopped'
        ? 'STOPPED'
        : s.status === 'held'
          ? 'HELD'
          : 'INCOMPLETE';
  const lines = [
    `${head}: ${s.rows} vectors (${s.dims ?? '?'} dims, ${s.model}) in ${out}`,
    `  documents ${s.documents}, rejected ${s.rejects}${s.rejects > 0 ? ` (${REJECTS_FILE})` : ''}, chunks ${s.chunks}, tokens ${s.tokens}`,
    `  batches ${s.batches.planned}: ${s.batches.embedded} embedded, ${s.batches.resumed} already done, ${s.batches.failed} failed`,
    `  requests ${s.requests}, retries ${s.retries}, cost ${usd}, ${(s.elapsedMs / 1000).toFixed(1)} s`,
    ...describeTranscription(s),
    ...describeIncremental(s),
    ...describeRemaining(s),
    describeSizing(s),
  ];
  const chunkFailures = s.failures - (s.transcription?.failed ?? 0);
  if (chunkFailures > 0) lines.push(`  ${chunkFailures} chunks could not be embedded: see ${FAILURES_FILE}`);
  if (s.switchIf) lines.push(`  --switch-if: ${s.switchIf.reason}`, `  report: ${s.switchIf.report}`);
  if (s.status === 'held' && s.version)
    lines.push(
      `  ${s.version.name} is built but not current; switch to it by hand: embedpipe datasets ${out} --switch ${s.version.name}`,
    );
  if (s.status === 'incomplete') lines.push('  re-run the same command to retry the failed batches');
  else if (s.status === 'stopped') lines.push(`  stopped: ${s.stop?.message ?? ''}`);
  else if (s.status !== 'held') lines.push(...queryHints(s, out));
  return `${lines.join('\n')}\n`;
}

/**
 * One-line queries for the finished dataset (docs/output.md, "Reading the dataset"). DuckDB reads the
 * vector column as FLOAT[], so the nearest-neighbour query casts it to FLOAT[dims] first. DuckDB
 * has no built-in Arrow IPC reader: an `--output-format arrow` dataset gets pyarrow's line.
 */
export function queryHints(s: Pick<RunSummary, 'files' | 'dims'>, out: string): string[] {
  const sqlPath = (path: string) => `'${path.replace(/'/g, "''")}'`;
  if (s.files.length > 0 && s.files.every((file) => file.endsWith('.arrow'))) {
    return [
      `  query it: python3 -c "import pyarrow.dataset as ds; print(ds.dataset(${sqlPath(out)}, format='arrow').head(5))"`,
    ];
  }
  const scan = `read_parquet(${sqlPath(`${out}/*.parquet`)})`;
  const hints = [`  query it: duckdb -c "SELECT id, chunk_index, text FROM ${scan} LIMIT 5"`];
  if (s.dims) {
    hints.push(
      `  nearest neighbours of the first chunk: duckdb -c "WITH t AS (SELECT id, chunk_index, text, embedding::FLOAT[${s.dims}] AS e FROM ${scan}), ` +
        'q AS (SELECT e FROM t ORDER BY id, chunk_index LIMIT 1) ' +
        'SELECT t.id, t.chunk_index, array_cosine_similarity(t.e, q.e) AS score, left(t.text, 60) AS text ' +
        'FROM t, q ORDER BY score DESC LIMIT 5"',
    );
  }
  return hints;
}

/**
 * `--sync-to`: the store brought to the version the run switched to. The run's result stands
 * whatever the sync does: a store that cannot be synced is reported (exit 11) after the summary.
 */
async function syncAfterSwitch(
  summary: RunSummary,
  url: string | undefined,
  logger: Logger,
): Promise<{ report?: SyncReport; error?: unknown } | undefined> {
  if (url === undefined || summary.version?.current !== true) return undefined;
  const { openStore } = await import('../stores/open-store.js');
  const { syncStore } = await import('../stores/sync.js');
  try {
    const store = await openStore(url, { logger });
    try {
      return { report: await syncStore(summary.outDir, store, { logger }) };
    } finally {
      await store.close().catch(() => {});
    }
  } catch (error) {
    logger.error(
      { version: summary.version.name },
      'the dataset switched to its new version, but the store was not synced: embedpipe sync finishes it',
    );
    return { error };
  }
}
