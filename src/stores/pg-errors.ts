/**
 * PostgreSQL and connection failures as one-line StoreErrors naming the store (its URL without the
 * password). The password is never part of a message: the label has none, and any message text
 * is scrubbed of it all the same (a driver could echo what it was given).
 */
import { StoreError } from '../errors.js';

/** Why a socket-level connect failed, in words, by its code. */
const NETWORK_PROBLEMS: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused (is PostgreSQL running there?)',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host not found (DNS lookup failed)',
  ETIMEDOUT: 'no answer (timed out)',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ECONNRESET: 'the connection was reset',
  EPIPE: 'the connection was closed',
};

/** What to do about a server error, by its SQLSTATE. */
const SERVER_HINTS: Readonly<Record<string, string>> = {
  '28P01': 'check the password in the URL or PGPASSWORD',
  '28000': 'the server refused this user or host (pg_hba.conf)',
  '3D000': 'create the database first, or fix its name in the URL',
  '42501': 'the user lacks a privilege on the table or schema',
  '53300': 'the server has too many connections',
};

interface ErrorFields {
  readonly message?: unknown;
  readonly code?: unknown;
  readonly detail?: unknown;
  readonly errors?: unknown;
}

/** One line: `${doing} ${label}: ${why}`, `error` kept as the cause. */
export function storeError(label: string, doing: string, error: unknown, password?: string): StoreError {
  if (error instanceof StoreError) return error;
  return new StoreError(scrub(`${doing} ${label}: ${reasonOf(error)}`, password), { cause: error });
}

/** CREATE EXTENSION vector failed: no permission (ask an admin), pgvector not installed, or else. */
export function extensionError(
  label: string,
  database: string | undefined,
  error: unknown,
  password?: string,
): StoreError {
  const where = `in database ${database ?? '(the default)'}`;
  switch (sqlState(error)) {
    case '42501':
      return new StoreError(
        `${label}: no permission to create the pgvector extension: ask an admin to run CREATE EXTENSION vector; ${where}`,
        { cause: error },
      );
    // 0A000: "extension is not available" (PostgreSQL 15+); 58P01: no control file (before).
    case '0A000':
    case '58P01':
      return new StoreError(
        scrub(
          `${label}: pgvector is not installed on the server (${reasonOf(error)}): install it, then run CREATE EXTENSION vector; ${where}`,
          password,
        ),
        { cause: error },
      );
    default:
      return storeError(label, 'cannot create the pgvector extension in', error, password);
  }
}

/** The reason in words: a network code's meaning, or the server's message (with SQLSTATE hints). */
export function reasonOf(error: unknown): string {
  const fields = (typeof error === 'object' && error !== null ? error : {}) as ErrorFields;
  const code = typeof fields.code === 'string' ? fields.code : undefined;
  const network = code ? NETWORK_PROBLEMS[code] : undefined;
  if (network) return `${network} (${code})`;
  // Node's happy-eyeballs connect reports each address it tried in an AggregateError.
  if (Array.isArray(fields.errors) && fields.errors.length > 0) return reasonOf(fields.errors[0]);
  const message = typeof fields.message === 'string' && fields.message ? fields.message : String(error);
  if (/timeout expired|connection timeout/i.test(message)) return 'no answer in time (connection timeout)';
  const detail = typeof fields.detail === 'string' && fields.detail ? ` (${fields.detail})` : '';
  const hint = code ? SERVER_HINTS[code] : undefined;
  return `${message}${detail}${hint ? `: ${hint}` : ''}`;
}

/** The server's SQLSTATE of an error, when it has one. */
export function sqlState(error: unknown): string | undefined {
  const code = (error as ErrorFields | undefined)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/** One line, without the password (only scrubbed when long enough not to mangle every word). */
function scrub(text: string, password: string | undefined): string {
  const line = text.replace(/\s*[\r\n]+\s*/g, ' ').trim();
  return password && password.length >= 3 ? line.split(password).join('***') : line;
}
