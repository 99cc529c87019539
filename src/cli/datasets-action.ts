/** What `embedpipe datasets` does; loaded only when the command runs (see datasets.ts). */
import { resolve } from 'node:path';
import { DatasetContractError, UsageError } from '../errors.js';
import { lockDataset } from '../output/lock.js';
import { verifyVersion } from '../output/verify.js';
import { type DatasetVersion, VersionedDataset } from '../output/versions.js';
import { printJson, printTable } from './format.js';

export interface DatasetsFlags {
  switch?: string;
  remove?: string;
  json?: boolean;
}

export async function datasetsAction(dir: string, flags: DatasetsFlags): Promise<void> {
  const dataset = new VersionedDataset(resolve(dir));
  if (flags.switch || flags.remove) {
    // Under the dataset's lock: never while a run is building or switching.
    const lock = await lockDataset(dataset.root);
    try {
      if (flags.switch) await switchBack(dataset, flags.switch);
      if (flags.remove) await dataset.remove((await dataset.version(flags.remove)).name);
    } finally {
      await lock.release();
    }
  }
  const versions = await dataset.list();
  if (versions.length === 0 && !flags.json) {
    throw new UsageError(
      `${dir} has no dataset versions (no ${dataset.root} folder): run embedpipe run --out ${dir} first`,
    );
  }
  if (flags.json) {
    printJson(versions.map(describe));
    return;
  }
  printTable(
    ['VERSION', 'STATE', 'CREATED', 'MODEL', 'DIMS', 'ROWS', 'DOCUMENTS', 'CHANGES', 'COST USD'],
    versions.map((v) => {
      const row = describe(v);
      const c = v.manifest && 'dataset' in v.manifest ? v.manifest.dataset?.documents : undefined;
      return [
        v.name,
        row.state,
        row.createdAt ?? '-',
        row.model ?? '-',
        row.dims !== undefined ? String(row.dims) : '-',
        row.rows !== undefined ? String(row.rows) : '-',
        row.documents !== undefined ? String(row.documents) : '-',
        c ? `+${c.added} ~${c.changed} -${c.deleted}` : '-',
        row.costUsd ?? '-',
      ];
    }),
  );
}

async function switchBack(dataset: VersionedDataset, name: string): Promise<void> {
  const version = await dataset.version(name);
  if (!version.manifest)
    throw new UsageError(`${name} is unfinished (no manifest): only a complete version can be current`);
  // Checked like any switch: readers never see a version that breaks the contract.
  const { violations } = await verifyVersion({ dir: version.dir });
  if (violations.length > 0) throw new DatasetContractError(version.dir, violations);
  await dataset.switchTo(name);
}

/** One version for people and scripts. */
function describe(v: DatasetVersion) {
  const m = v.manifest;
  const counts = m?.counts;
  return {
    version: v.name,
    state: v.current ? 'current' : m ? 'complete' : 'unfinished',
    path: v.dir,
    ...(m
      ? {
          createdAt: m.createdAt,
          model: m.model,
          dims: m.dims,
          providers: m.providers,
          plan: m.plan,
          rows: counts?.rows,
          documents: counts?.documents,
          costUsd: counts && 'costUsd' in counts ? counts.costUsd : undefined,
          ...('dataset' in m && m.dataset ? { dataset: m.dataset } : {}),
        }
      : {}),
  };
}
