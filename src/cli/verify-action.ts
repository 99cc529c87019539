/** What `embedpipe verify` does; loaded only when the command runs (see verify.ts). */
import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { DEFAULTS } from '../config/defaults.js';
import { DatasetContractError, UsageError } from '../errors.js';
import { retrying } from '../gateway/index.js';
import { MANIFEST_FILE } from '../output/manifest.js';
import { type SampleResult, sampleCheck } from '../output/sample-check.js';
import { verifyVersion } from '../output/verify.js';
import { VersionedDataset } from '../output/versions.js';
import type { GatewayFlags } from './context.js';
import { printJson } from './format.js';
import { openQueryGateway } from './query-gateway.js';

export interface VerifyFlags extends GatewayFlags {
  version?: string;
  deep?: boolean;
  sample?: number;
  minCosine?: number;
  emulator?: boolean;
}

export async function verifyAction(dir: string, flags: VerifyFlags): Promise<void> {
  const target = await versionFolder(resolve(dir), flags.version);
  const report = await verifyVersion({ dir: target, ...(flags.deep ? { deep: true } : {}) });
  const sample = flags.sample && report.model && report.format ? await sampled(report, flags) : undefined;
  const violations = [...report.violations, ...(sample?.violations ?? [])];
  if (flags.json) {
    printJson({
      dir: report.dir,
      ok: violations.length === 0,
      model: report.model,
      dims: report.dims,
      files: report.files.length,
      rows: report.rows,
      documents: report.documents,
      deep: report.deep,
      checked: report.checked,
      ...(sample
        ? { sample: { rows: sample.rows, lowestCosine: sample.lowest, costUsd: sample.costUsd } }
        : {}),
      violations,
    });
  } else {
    const checked = [report.deep ? 'deep' : 'fast', sample ? `${sample.rows} rows re-embedded` : undefined]
      .filter(Boolean)
      .join(', ');
    process.stdout.write(
      `${report.dir}: ${report.files.length} files, ${report.rows} rows, ${report.documents} documents (${checked})\n`,
    );
    if (sample?.lowest !== undefined)
      process.stdout.write(`sample: lowest cosine similarity ${sample.lowest.toFixed(6)}\n`);
    for (const v of violations) process.stdout.write(`FAIL [${v.check}] ${v.message}\n`);
    if (violations.length === 0) process.stdout.write('ok: the version keeps the dataset contract\n');
  }
  // The violations are printed above: the error line only says so.
  if (violations.length > 0)
    throw new DatasetContractError(report.dir, [
      { check: 'verify', message: `${violations.length} checks failed (listed above)` },
    ]);
}

/** The folder to check: `--version vN` of the dataset, else the current version (DIR or its link). */
async function versionFolder(dir: string, version: string | undefined): Promise<string> {
  const dataset = new VersionedDataset(dir);
  if (version !== undefined) return (await dataset.version(version)).dir;
  try {
    await stat(resolve(dir, MANIFEST_FILE));
    return dir;
  } catch {
    const versions = await dataset.list();
    if (versions.length === 0)
      throw new UsageError(`${dir} is no dataset: it has no ${MANIFEST_FILE} and no ${dataset.root} folder`);
    const current = versions.find((v) => v.current);
    if (!current) throw new UsageError(`${dir} has no current version (no run has switched it yet)`);
    return current.dir;
  }
}

async function sampled(
  report: Awaited<ReturnType<typeof verifyVersion>>,
  flags: VerifyFlags,
): Promise<SampleResult> {
  const { client, close } = await openQueryGateway(flags, 'verify --sample embeds rows again');
  try {
    return await sampleCheck({
      dir: report.dir,
      format: report.format!,
      model: report.model!,
      files: report.files,
      sample: flags.sample!,
      minCosine: flags.minCosine ?? DEFAULTS.verify.minCosine,
      gateway: retrying(client, DEFAULTS.lookupRetry),
    });
  } finally {
    await close();
  }
}
