/** A store from its URL: `postgres://…?table=…` (pgvector) or `lancedb:///path?table=…` (LanceDB). */
import { UsageError } from '../errors.js';
import type { Logger } from '../observability/logger.js';
import type { VectorStore } from './store.js';

export type StoreKind = 'pgvector' | 'lancedb';

/** The kind of store a URL names, or undefined when it names none (a dataset folder, for `search`). */
export function storeKindOf(url: string): StoreKind | undefined {
  if (/^postgres(ql)?:\/\//i.test(url)) return 'pgvector';
  if (/^lancedb:\/\//i.test(url)) return 'lancedb';
  return undefined;
}

/** Opens the store; each driver is loaded only when its kind is asked for (LanceDB's is native). */
export async function openStore(
  url: string,
  env: { readonly pgPassword?: string; readonly logger?: Logger } = {},
): Promise<VectorStore> {
  switch (storeKindOf(url)) {
    case 'pgvector': {
      const { openPgvectorStore } = await import('./pgvector.js');
      return openPgvectorStore(url, env.pgPassword !== undefined ? { PGPASSWORD: env.pgPassword } : {});
    }
    case 'lancedb': {
      const { openLanceStore } = await import('./lancedb.js');
      return openLanceStore(url, env.logger ? { logger: env.logger } : {});
    }
    default:
      throw new UsageError(
        `--to ${url.replace(/\/\/[^@/]*@/, '//…@')}: not a store URL (postgres://user@host:5432/db?table=docs or lancedb:///path/to/db?table=docs)`,
      );
  }
}
