/**
 * The sync state of a LanceDB table (model, synced, pending) lives in the metadata of its
 * `embedding` field. LanceDB 0.31's JS API can update a field's metadata (`updateFieldMetadata`, a
 * metadata-only commit, one table version) but not the schema-level metadata, which is fixed at
 * creation. Kept in the table's own schema, the state is versioned with the rows, survives
 * `mergeInsert`, `optimize` and index builds, and is gone with the table on `--replace`: no sidecar
 * table to keep consistent with it.
 */
import type { Field, Schema } from 'apache-arrow';
import type { SyncedVersion } from './store.js';

export const STATE_KEYS = {
  model: 'embedpipe.model',
  synced: 'embedpipe.synced',
  pending: 'embedpipe.pending',
} as const;

export interface TableState {
  readonly model?: string;
  readonly synced?: SyncedVersion;
  readonly pending?: SyncedVersion;
}

export function readState(schema: Schema): TableState {
  const field: Field | undefined = schema.fields.find((candidate) => candidate.name === 'embedding');
  const metadata = field?.metadata ?? new Map<string, string>();
  const model = metadata.get(STATE_KEYS.model);
  const synced = parseVersion(metadata.get(STATE_KEYS.synced));
  const pending = parseVersion(metadata.get(STATE_KEYS.pending));
  return {
    ...(model ? { model } : {}),
    ...(synced ? { synced } : {}),
    ...(pending ? { pending } : {}),
  };
}

export const versionJson = (version: SyncedVersion): string =>
  JSON.stringify({ model: version.model, version: version.version, dims: version.dims, at: version.at });

/** A recorded version, or undefined when absent or not one (edited by hand: treated as absent). */
function parseVersion(text: string | undefined): SyncedVersion | undefined {
  if (!text) return undefined;
  try {
    const value = JSON.parse(text) as Partial<Record<keyof SyncedVersion, unknown>>;
    const { model, version, dims, at } = value;
    if (typeof model !== 'string' || typeof version !== 'string' || typeof at !== 'string') return undefined;
    if (typeof dims !== 'number' || !Number.isInteger(dims)) return undefined;
    return { model, version, dims, at };
  } catch {
    return undefined;
  }
}
