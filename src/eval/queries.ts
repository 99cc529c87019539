/**
 * The queries an evaluation asks: a user's file, or known-item queries drawn from the dataset.
 *
 * A file is JSONL, one `{"query": "…", "relevant": […]}` per line (an optional `"id"` names it);
 * `relevant` lists document ids, or `{"id", "chunk_index"}` items (chunk level), each with an
 * optional `"grade"` (gain, default 1). All of a file's queries are at one level.
 *
 * Drawn queries: a seeded sample of chunks of the baseline version; each query is a window of words
 * from its chunk, and the chunk's document is the one relevant item (document level, so versions
 * that chunk differently are judged on the same items). Known-item queries favour lexical overlap:
 * they say whether a model finds a passage again, not whether it understands a question.
 */
import { readFile } from 'node:fs/promises';
import { UsageError } from '../errors.js';
import { chunkKey, type RankLevel } from './exact-search.js';
import type { VersionVectors } from './version-vectors.js';

export interface EvalQuery {
  readonly id: string;
  readonly text: string;
  /** Relevant item keys (document ids, or `id#chunk_index`) and their gains. */
  readonly relevant: ReadonlyMap<string, number>;
}

export interface QuerySet {
  readonly queries: readonly EvalQuery[];
  readonly level: RankLevel;
  /** How the queries were made, for the report. */
  readonly how: string;
}

/** Words in a drawn query: a passage long enough to be specific, short enough to be a query. */
const QUERY_WORDS = 12;
/** Chunks shorter than this many words are not drawn from (a title says too little). */
const MIN_WORDS = 8;

export async function readQueryFile(file: string): Promise<QuerySet> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read the queries file ${file}: ${(error as Error).message}`, {
      cause: error,
    });
  }
  const queries: EvalQuery[] = [];
  let level: RankLevel | undefined;
  const lines = text.split(/\r?\n/);
  lines.forEach((line, i) => {
    if (line.trim() === '') return;
    const where = `${file} line ${i + 1}`;
    let row: unknown;
    try {
      row = JSON.parse(line);
    } catch {
      throw new UsageError(`${where}: not JSON`);
    }
    const { query, relevant, id } = (row ?? {}) as Record<string, unknown>;
    if (typeof query !== 'string' || query.trim() === '')
      throw new UsageError(`${where}: "query" must be a non-empty string`);
    if (!Array.isArray(relevant) || relevant.length === 0)
      throw new UsageError(
        `${where}: "relevant" must list at least one document id or {"id", "chunk_index"}`,
      );
    const gains = new Map<string, number>();
    for (const item of relevant) {
      const parsed = relevantItem(item, where);
      if (level !== undefined && parsed.level !== level)
        throw new UsageError(
          `${where}: mixes document ids and {"id", "chunk_index"} items with the lines before; use one level per file`,
        );
      level = parsed.level;
      gains.set(parsed.key, parsed.gain);
    }
    queries.push({
      id: typeof id === 'string' || typeof id === 'number' ? String(id) : `q${i + 1}`,
      text: query,
      relevant: gains,
    });
  });
  if (queries.length === 0) throw new UsageError(`${file} holds no queries`);
  return { queries, level: level ?? 'document', how: `${queries.length} queries from ${file}` };
}

function relevantItem(item: unknown, where: string): { key: string; level: RankLevel; gain: number } {
  if (typeof item === 'string' || typeof item === 'number')
    return { key: String(item), level: 'document', gain: 1 };
  if (item && typeof item === 'object') {
    const { id, chunk_index: chunkIndex, grade } = item as Record<string, unknown>;
    const gain = grade === undefined ? 1 : Number(grade);
    if (!(Number.isFinite(gain) && gain > 0))
      throw new UsageError(`${where}: a "grade" must be a number above 0`);
    if (typeof id !== 'string' && typeof id !== 'number')
      throw new UsageError(`${where}: a relevant item needs an "id"`);
    if (chunkIndex === undefined) return { key: String(id), level: 'document', gain };
    if (!Number.isInteger(chunkIndex) || (chunkIndex as number) < 0)
      throw new UsageError(`${where}: "chunk_index" must be an integer ≥ 0`);
    return { key: chunkKey(String(id), chunkIndex as number), level: 'chunk', gain };
  }
  throw new UsageError(`${where}: a relevant item is a document id or {"id", "chunk_index"}`);
}

/** `count` known-item queries from the chunks of `version`, drawn with `random` (seeded). */
export function drawKnownItems(
  version: VersionVectors,
  count: number,
  random: () => number,
  seed: number,
): QuerySet {
  const eligible: number[] = [];
  for (let row = 0; row < version.rows; row++)
    if (wordsOf(version.texts[row]!).length >= MIN_WORDS) eligible.push(row);
  if (eligible.length === 0)
    throw new UsageError(
      `version ${version.name} has no chunk of ${MIN_WORDS} words or more to draw queries from: pass --queries FILE`,
    );
  // A partial Fisher–Yates shuffle: `count` distinct chunks (all of them when there are fewer).
  const picks = eligible.slice();
  const n = Math.min(count, picks.length);
  for (let i = 0; i < n; i++) {
    const j = i + Math.floor(random() * (picks.length - i));
    [picks[i], picks[j]] = [picks[j]!, picks[i]!];
  }
  const queries = picks.slice(0, n).map((row, i) => {
    const words = wordsOf(version.texts[row]!);
    const length = Math.min(QUERY_WORDS, Math.max(MIN_WORDS, Math.floor(words.length / 2)));
    const start = Math.floor(random() * (words.length - length + 1));
    return {
      id: `known-${i + 1}`,
      text: words.slice(start, start + length).join(' '),
      relevant: new Map([[version.ids[row]!, 1]]),
    };
  });
  return {
    queries,
    level: 'document',
    how:
      `${n} known-item queries drawn with seed ${seed} from the chunks of ${version.name} (of ${eligible.length} with ` +
      `${MIN_WORDS}+ words): each a window of up to ${QUERY_WORDS} words of its chunk, whose document is the one relevant item. ` +
      'They favour lexical overlap: they say whether a model finds a passage again, not whether it understands a question.',
  };
}

const wordsOf = (text: string): string[] => text.split(/\s+/).filter((w) => w !== '');
