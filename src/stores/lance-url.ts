/**
 * `lancedb:` store URLs. An embedded LanceDB database is a folder on this machine:
 *
 * - `lancedb:///abs/path/to/db?table=docs`: an absolute folder;
 * - `lancedb://./relative/db?table=docs` (or `lancedb://../db?…`): relative to the working folder.
 *
 * `table` is required (a typo'd or forgotten table would otherwise sync into a default one); other
 * parameters are refused, so is a host (LanceDB Cloud and object stores are not supported here).
 * The path is percent-decoded (`%20` for a space).
 */
import { resolve } from 'node:path';
import { StoreError } from '../errors.js';

export interface LanceLocation {
  /** The database folder, absolute. */
  readonly path: string;
  readonly table: string;
  /** `lancedb:///abs/path?table=name`, for messages. */
  readonly label: string;
}

const FORMS = 'lancedb:///absolute/folder?table=NAME or lancedb://./relative/folder?table=NAME';
/** What LanceDB accepts as a table name (it becomes `<name>.lance`, a folder). */
const TABLE_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;

export function parseLanceUrl(url: string, cwd: string = process.cwd()): LanceLocation {
  const bad = (why: string) => new StoreError(`bad LanceDB store URL ${url}: ${why} (use ${FORMS})`);
  // The scheme is case-insensitive, as store URLs are told apart by it (open-store.ts).
  if (!/^lancedb:\/\//i.test(url)) throw bad('it must start with lancedb://');
  const rest = url.slice('lancedb://'.length);
  const queryAt = rest.indexOf('?');
  const rawPath = queryAt < 0 ? rest : rest.slice(0, queryAt);
  const query = new URLSearchParams(queryAt < 0 ? '' : rest.slice(queryAt + 1));
  if (rawPath.includes('#')) throw bad('it has a #fragment');
  let decoded: string;
  try {
    decoded = decodeURIComponent(rawPath);
  } catch {
    throw bad('its path has a bad %-escape');
  }
  if (decoded === '' || decoded === '/') throw bad('no database folder is given');
  const relative =
    decoded.startsWith('./') || decoded.startsWith('../') || decoded === '.' || decoded === '..';
  if (!decoded.startsWith('/') && !relative)
    throw bad(`"${decoded.split('/')[0]}" is read as a host, and remote LanceDB is not supported`);
  const unknown = [...query.keys()].filter((key) => key !== 'table');
  if (unknown.length > 0) throw bad(`unknown parameter ${unknown.join(', ')}`);
  const table = query.get('table');
  if (!table) throw bad('name the table with ?table=NAME');
  if (!TABLE_NAME.test(table)) throw bad(`table "${table}" may hold only letters, digits, _ . -`);
  const path = resolve(cwd, decoded);
  return { path, table, label: `lancedb://${path}?table=${table}` };
}
