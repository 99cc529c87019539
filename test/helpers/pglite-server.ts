/**
 * PostgreSQL + pgvector for tests, with no server installed: PGlite (PostgreSQL in WASM) with the
 * vector extension, served over the wire by pglite-socket on a free port of 127.0.0.1, so the store
 * talks to it with node-postgres as it would to a real server. PGlite takes ~10 s to start here:
 * start one per test file (beforeAll, with a generous hook timeout).
 *
 * The socket server serves one connection at a time by default (a second waits for the first to
 * close), and every connection shares PGlite's single session: a test that inspects the database
 * with its own client while a store is open asks for `maxConnections` > 1 and must not do so while
 * the store is inside a transaction.
 */
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';

export interface PgliteServer {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` (no query string; add `?table=…`). */
  readonly url: string;
  stop(): Promise<void>;
}

export interface PgliteOptions {
  /** Connections served at once (default 1, as pglite-socket). */
  readonly maxConnections?: number;
}

export async function startPglite(options: PgliteOptions = {}): Promise<PgliteServer> {
  const db = await PGlite.create({ extensions: { vector } });
  const server = new PGLiteSocketServer({
    db,
    port: 0,
    host: '127.0.0.1',
    ...(options.maxConnections !== undefined ? { maxConnections: options.maxConnections } : {}),
  });
  try {
    await server.start();
  } catch (error) {
    await db.close();
    throw error;
  }
  return {
    // getServerConn() gives `127.0.0.1:<port>`, the port the OS picked for port 0.
    url: `postgres://postgres@${server.getServerConn()}/postgres`,
    async stop() {
      await server.stop();
      await db.close();
    },
  };
}

let tables = 0;

/** A table name no other test (or earlier run against a shared DATABASE_URL) uses. */
export function uniqueTable(prefix = 't'): string {
  tables += 1;
  return `${prefix}_${process.pid}_${Date.now().toString(36)}_${tables}`;
}

/** `url` with `?table=NAME` (or `&table=NAME` when it already has a query string). */
export function tableUrl(url: string, table: string): string {
  return `${url}${url.includes('?') ? '&' : '?'}table=${encodeURIComponent(table)}`;
}
