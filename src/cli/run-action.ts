/** What `embedpipe run` does; loaded only when the command runs (see run.ts). */
import { isAbsolute, relative } from 'node:path';
import { readEnvironment } from '../config/env.js';
import { loadJobFile } from '../config/job.js';
import { type RunFlags, resolveRunSettings } from '../config/settings.js';
import { EMULATOR_API_KEY, type RunningEmulator, startEmulator } from '../emulator/index.js';
import { ExitCode, InterruptedError, UsageError } from '../errors.js';
import { GatewayClient } from '../gateway/index.js';
import { createLogger } from '../observability/logger.js';
import { startProgress } from '../observability/progress.js';
import { RunStats } from '../observability/stats.js';
import { type RunSummary, runPipeline } from '../pipeline/run.js';
import { attribution } from './context.js';
import { printJson } from './format.js';

export interface RunCommandFlags extends RunFlags {
  json?: boolean;
}

export async function runAction(jobPath: string | undefined, flags: RunCommandFlags): Promise<void> {
  const env = readEnvironment();
  const job = jobPath ? await loadJobFile(jobPath) : undefined;
  const settings = resolveRunSettings(flags, job, env);
  const logger = createLogger({ ...(env.logLevel ? { level: env.logLevel } : {}) });

  let emulator: RunningEmulator | undefined;
  let baseUrl = settings.baseUrl;
  let apiKey = env.apiKey;
  if (settings.emulator) {
    emulator = await startEmulator({ recordRequests: false });
    baseUrl = emulator.baseUrl;
    apiKey = EMULATOR_API_KEY;
    logger.info({ baseUrl }, 'started the local gateway emulator');
  } else if (!apiKey) {
    throw new UsageError(
      'EMBEDPIPE_API_KEY is not set (or pass --emulator to use the local gateway emulator)',
    );
  }

  const client = new GatewayClient({
    baseUrl,
    ...(apiKey ? { apiKey } : {}),
    timeoutMs: settings.timeoutMs,
    maxInFlight: settings.concurrency,
    ...attribution(env),
  });
  const stats = new RunStats();
  const controller = new AbortController();
  const interrupt = () =>
    controller.abort(
      new InterruptedError('interrupted; finished batches are kept: re-run the same command to resume'),
    );
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);
  const progress = startProgress(stats);
  let summary: RunSummary;
  try {
    summary = await runPipeline(settings, { client, logger, stats, signal: controller.signal });
  } finally {
    progress.stop();
    process.off('SIGINT', interrupt);
    process.off('SIGTERM', interrupt);
    await client.close();
    await emulator?.close();
  }
  if (flags.json) printJson(summary);
  else process.stdout.write(describeSummary(summary));
  if (summary.status === 'incomplete') process.exitCode = ExitCode.batchesFailed;
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
      `dry run for ${s.model}: ${s.documents} documents, ${s.rejects} rejected, ${s.chunks} chunks, ` +
      `${bound ? 'at most ' : 'about '}${s.tokens} tokens in ${s.batches.planned} requests; estimated cost ` +
      `${bound ? 'at most ' : ''}${usd}\n${describeSizing(s)}\n` +
      (bound
        ? '  (no calibration yet: planned with the UTF-8 byte bound; a real run first measures how the gateway counts)\n'
        : '')
    );
  }
  const lines = [
    `${s.status === 'done' ? 'done' : 'INCOMPLETE'}: ${s.rows} vectors (${s.dims ?? '?'} dims, ${s.model}) in ${out}`,
    `  documents ${s.documents}, rejected ${s.rejects}${s.rejects > 0 ? ' (rejects.jsonl)' : ''}, chunks ${s.chunks}, tokens ${s.tokens}`,
    `  batches ${s.batches.planned}: ${s.batches.embedded} embedded, ${s.batches.resumed} already done, ${s.batches.failed} failed`,
    `  requests ${s.requests}, retries ${s.retries}, cost ${usd}, ${(s.elapsedMs / 1000).toFixed(1)} s`,
    describeSizing(s),
  ];
  if (s.failures > 0) lines.push(`  ${s.failures} chunks could not be embedded: see failures.jsonl`);
  if (s.status === 'incomplete') lines.push('  re-run the same command to retry the failed batches');
  else
    lines.push(
      `  query it: duckdb -c "SELECT id, chunk_index, text FROM read_parquet('${out}/*.parquet') LIMIT 5"`,
    );
  return `${lines.join('\n')}\n`;
}
