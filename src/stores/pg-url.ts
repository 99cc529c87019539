/**
 * `postgres:` store URLs: `postgres://user[:password]@host[:port]/db?table=docs[&schema=public]`
 * (also `postgresql://`; `sslmode=disable|require|verify-full`). The password comes from the URL,
 * else from PGPASSWORD. `table` is required (a forgotten table would otherwise sync into a default
 * one); other parameters are refused, so a typo is not silently ignored. Table and schema must be
 * plain identifiers: they are always double-quoted in SQL, so their case is kept as written.
 */
import type { ClientConfig } from 'pg';
import { StoreError } from '../errors.js';

export interface PgTarget {
  /** Where to connect, without the password (given to the client as a function, see pgvector.ts). */
  readonly connection: Omit<ClientConfig, 'password'>;
  readonly password: string | undefined;
  readonly schema: string;
  readonly table: string;
  /** The URL without its password, for every message. */
  readonly label: string;
}

/** The table that records each target table's synced and pending versions, in the same schema. */
export const SYNC_TABLE = 'embedpipe_sync';

const FORM = 'postgres://user[:password]@host:5432/db?table=NAME[&schema=NAME]';
const PARAMETERS = new Set(['table', 'schema', 'sslmode']);
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** PostgreSQL truncates longer names silently (NAMEDATALEN - 1). */
const MAX_IDENTIFIER_BYTES = 63;

/** A URL with its password cut out, safe to show even when it does not parse. */
export function withoutPassword(url: string): string {
  return url.replace(/^([A-Za-z][A-Za-z0-9+.-]*:\/\/[^:@/?#]*):[^?#]*@/, '$1@');
}

export function parsePgUrl(url: string, env: { readonly PGPASSWORD?: string | undefined }): PgTarget {
  const shown = withoutPassword(url);
  const bad = (why: string) => new StoreError(`bad PostgreSQL store URL ${shown}: ${why} (use ${FORM})`);
  if (!/^postgres(ql)?:\/\//i.test(url)) throw bad('it must start with postgres:// or postgresql://');
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw bad('it does not parse as a URL (a bad port, or an unescaped character in the password?)');
  }
  if (!parsed.hostname) throw bad('it names no host');
  if (parsed.hash) throw bad('it has a #fragment');
  const unknown = [...parsed.searchParams.keys()].filter((key) => !PARAMETERS.has(key));
  if (unknown.length > 0) throw bad(`unknown parameter ${unknown.join(', ')}`);
  const table = parsed.searchParams.get('table');
  if (!table) throw bad('it names no table (?table=NAME)');
  checkIdentifier(shown, 'table', table);
  if (table === SYNC_TABLE) throw new StoreError(`${shown}: table ${SYNC_TABLE} is embedpipe's own record`);
  const schema = parsed.searchParams.get('schema') ?? 'public';
  checkIdentifier(shown, 'schema', schema);
  const database = decode(bad, parsed.pathname.replace(/^\//, ''));
  if (database.includes('/')) throw bad('the database name has a /');
  const user = decode(bad, parsed.username);
  const password = parsed.password ? decode(bad, parsed.password) : env.PGPASSWORD || undefined;
  parsed.password = '';
  return {
    connection: {
      host: parsed.hostname.replace(/^\[(.*)\]$/, '$1'),
      port: parsed.port ? Number(parsed.port) : 5432,
      ...(user ? { user } : {}),
      ...(database ? { database } : {}),
      ssl: sslOf(bad, parsed.searchParams.get('sslmode')),
    },
    password,
    schema,
    table,
    label: parsed.href,
  };
}

/** `"name"`, for an identifier already checked by `checkIdentifier` (quotes doubled all the same). */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

function checkIdentifier(shown: string, what: string, name: string): void {
  if (!IDENTIFIER.test(name) || Buffer.byteLength(name) > MAX_IDENTIFIER_BYTES)
    throw new StoreError(
      `${shown}: ${what} ${JSON.stringify(name)} is not a plain SQL identifier ` +
        `(letters, digits and _, not starting with a digit, at most ${MAX_IDENTIFIER_BYTES} characters)`,
    );
}

function decode(bad: (why: string) => StoreError, text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw bad('a bad %-escape');
  }
}

function sslOf(bad: (why: string) => StoreError, mode: string | null): ClientConfig['ssl'] {
  switch (mode) {
    case null:
    case 'disable':
      return false;
    // As libpq: `require` encrypts without checking the certificate, `verify-full` checks it.
    case 'require':
      return { rejectUnauthorized: false };
    case 'verify-full':
      return true;
    default:
      throw bad(`sslmode=${mode} is not supported (disable, require or verify-full)`);
  }
}
