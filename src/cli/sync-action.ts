/** What `embedpipe sync` does; loaded only when the command runs (see sync.ts). */
import { readEnvironment } from '../config/env.js';
import { ExitCode, InterruptedError, UsageError } from '../errors.js';
import { createLogger } from '../observability/logger.js';
import { openStore } from '../stores/open-store.js';
import type { VectorStore } from '../stores/store.js';
import { type SyncReport, syncStore } from '../stores/sync.js';
import { type StoreVerification, verifyStore } from '../stores/verify-store.js';
import { printJson } from './format.js';

export interface SyncFlags {
  to: string;
  verify?: boolean;
  repair?: boolean;
  replace?: boolean;
  index?: string;
  halfvec?: boolean;
  sample?: number;
  json?: boolean;
}

export async function syncAction(dir: string, flags: SyncFlags): Promise<void> {
  if (flags.index !== undefined && flags.index !== 'hnsw')
    throw new UsageError(`--index ${flags.index}: the index kinds are: hnsw`);
  const env = readEnvironment();
  const logger = createLogger({ ...(env.logLevel ? { level: env.logLevel } : {}) });
  const stop = new AbortController();
  const interrupt = () =>
    stop.abort(new InterruptedError('sync interrupted: the store holds whole groups; re-run to finish'));
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);
  const store = await openStore(flags.to, { logger });
  try {
    const verify = async () => {
      const state = await store.describe();
      return verifyStore(dir, store, {
        ...(flags.sample !== undefined ? { sample: flags.sample } : {}),
        ...(state.halfvec ? { tolerance: 1e-3 } : {}),
      });
    };
    if (flags.verify && !flags.repair) return reportVerification(await verify(), flags);
    const before = flags.repair ? await verify() : undefined;
    const report = await syncStore(dir, store, {
      ...(flags.replace ? { replace: true } : {}),
      ...(flags.index === 'hnsw' ? { index: 'hnsw' as const } : {}),
      ...(flags.halfvec ? { halfvec: true } : {}),
      ...(before ? { force: new Set(before.differingVectors) } : {}),
      logger,
      signal: stop.signal,
    }).catch((error: unknown) => {
      throw stop.signal.aborted ? stop.signal.reason : error;
    });
    if (!flags.repair) return reportSync(report, flags);
    const after = await verify();
    if (!flags.json) reportSync(report, flags);
    reportVerification(after, flags, report);
  } finally {
    process.off('SIGINT', interrupt);
    process.off('SIGTERM', interrupt);
    await closeQuietly(store);
  }
}

async function closeQuietly(store: VectorStore): Promise<void> {
  await store.close().catch(() => {});
}

function reportSync(report: SyncReport, flags: SyncFlags): void {
  if (flags.json) {
    printJson(report);
    return;
  }
  const from = report.from ? `from ${report.from} ` : '';
  process.stdout.write(
    `${report.store}: ${from}to ${report.version} (${report.rows} rows, ${report.dims} dims): ` +
      `${report.upserted} written, ${report.deleted} deleted, ${report.unchanged} unchanged ` +
      `in ${report.groups} groups, ${(report.elapsedMs / 1000).toFixed(1)} s\n`,
  );
}

function reportVerification(verification: StoreVerification, flags: SyncFlags, repaired?: SyncReport): void {
  if (!verification.equal) process.exitCode = ExitCode.storeDiffers;
  if (flags.json) {
    printJson(repaired ? { sync: repaired, verify: verification } : verification);
    return;
  }
  const v = verification;
  if (v.equal) {
    process.stdout.write(
      `${v.store} equals ${v.version}: ${v.rows.store} rows, every key and content hash, ${v.vectors.compared} vectors compared\n`,
    );
    return;
  }
  const problems = [
    v.storeVersion !== v.version ? `it says it holds ${v.storeVersion ?? 'no synced version'}` : '',
    v.pending ? `a sync to ${v.pending} did not finish` : '',
    v.missing ? `${v.missing} rows missing` : '',
    v.extra ? `${v.extra} rows that the dataset does not have` : '',
    v.changed ? `${v.changed} rows with another content hash` : '',
    v.vectors.differ ? `${v.vectors.differ} of ${v.vectors.compared} sampled vectors differ` : '',
  ].filter(Boolean);
  process.stdout.write(
    `${v.store} differs from ${v.version} (${v.rows.dataset} rows; the store holds ${v.rows.store}): ${problems.join('; ')}\n` +
      (v.examples.length ? `  e.g. ${v.examples.join(', ')}\n` : '') +
      'embedpipe sync --repair writes the difference from the dataset\n',
  );
}
