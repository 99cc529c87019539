/**
 * Reading an answer's body. An embeddings answer's base64 vectors are nearly all of its bytes: they
 * are cut out of the JSON text (each `"embedding":"…"` parsed as a placeholder), JSON.parse reads
 * what is left, and each vector's base64 is put back in its place as its own one-byte string. The result
 * equals JSON.parse of the whole text, without a string of the whole body or JSON.parse walking the
 * vectors. It is taken only where that is certain:
 * - the body is ASCII without a backslash, so no escape can hide a quote and every `"` delimits a
 *   string: `"embedding":"` is then the key `embedding` and the start of its string value;
 * - the placeholder, `"\u0000"`, is a string no such body holds (it has no escapes, and a raw
 *   control character is not JSON), and every one is back in a `data[].embedding`, in order.
 * Any other body is parsed whole.
 */
import { isAscii } from 'node:buffer';
import { stripBom } from '../files/bom.js';

const EMBEDDING_KEY = Buffer.from('"embedding":"', 'latin1');
/** Where a value was cut out: an escape, so never a string of the body itself. */
const PLACEHOLDER = '\\u0000';
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * A body's text, a leading BOM dropped. An ASCII body (every answer of base64 vectors) becomes a
 * one-byte string by a copy: JSON.parse reads that measurably faster than the two-byte string a
 * UTF-8 decoder builds (docs/benchmarks.md, "Design figures").
 */
export function bodyTextOf(bytes: Buffer): string {
  const body = stripBom(bytes);
  return isAscii(body) ? body.toString('latin1') : body.toString('utf8');
}

/** JSON.parse of a body's text (throws as it does). */
export function parseJsonBody(bytes: Buffer): unknown {
  return JSON.parse(bodyTextOf(bytes));
}

/**
 * parseJsonBody of an embeddings answer, its vectors lifted out first where that is safe. The BOM
 * and the ASCII test are taken once for both paths (an answer of float arrays takes the second).
 */
export function parseEmbeddingsBody(bytes: Buffer): unknown {
  const body = stripBom(bytes);
  const ascii = isAscii(body);
  return parseLifted(body, ascii) ?? JSON.parse(body.toString(ascii ? 'latin1' : 'utf8'));
}

/**
 * The parsed body (its BOM dropped) with its vectors' base64 cut out and put back; undefined where
 * not certain. `ascii`: whether the body is ASCII, when the caller knows.
 */
export function parseLifted(body: Buffer, ascii = isAscii(body)): unknown {
  if (!ascii || body.indexOf(BACKSLASH) >= 0) return undefined;
  const kept: string[] = [];
  const lifted: string[] = [];
  let from = 0;
  for (let at = body.indexOf(EMBEDDING_KEY); at >= 0; at = body.indexOf(EMBEDDING_KEY, from)) {
    const start = at + EMBEDDING_KEY.length;
    const end = body.indexOf(QUOTE, start);
    if (end < 0) return undefined; // an unterminated string: JSON.parse of the whole names it
    kept.push(body.toString('latin1', from, start), PLACEHOLDER);
    lifted.push(body.toString('latin1', start, end));
    from = end;
  }
  if (lifted.length === 0) return undefined;
  kept.push(body.toString('latin1', from));
  let json: unknown;
  try {
    json = JSON.parse(kept.join(''));
  } catch {
    return undefined;
  }
  const data = (json as { data?: unknown } | null)?.data;
  if (!Array.isArray(data)) return undefined;
  let next = 0;
  for (const item of data) {
    if (item === null || typeof item !== 'object' || (item as { embedding?: unknown }).embedding !== '\0')
      continue;
    (item as { embedding: string }).embedding = lifted[next++]!;
  }
  return next === lifted.length ? json : undefined;
}
