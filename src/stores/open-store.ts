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
  options: { readonly logger?: Logger } = {},
): Promise<VectorStore> {
  switch (storeKindOf(url)) {
    case 'pgvector': {
      const { openPgvectorStore } = await import('./pgvector.js');
      // The password: from the URL, else PGPASSWORD in this process's environment.
      return openPgvectorStore(url);
    }
    case 'lancedb': {
      const { openLanceStore } = await import('./lancedb.js');
      return openLanceStore(url, options.logger ? { logger: options.logger } : {});
    }
    default:
      throw new UsageError(
        `--to ${url.replace(/\/\/[^@/]*@/, '//…@')}: not a store URL (postgres://user@host:5432/db?table=docs or lancedb:///path/to/db?table=docs)`,
      );
  }
}
