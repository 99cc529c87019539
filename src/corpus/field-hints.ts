/**
 * Hints for an input whose id or text field is named otherwise than --id-field/--text-field say:
 * the fields a row holds (briefly, for a reject) and a guess at which of them to pick, from their
 * names (doc_id, uuid, body, content…) and, for JSONL, their values (the longest strings).
 */

/** What the leading rows of a JSONL file held in one field (a CSV column: its name alone). */
export interface FieldSample {
  readonly name: string;
  /** Rows holding it (not null, not empty). */
  rows: number;
  /** Rows where it could be an id: a non-empty string or a safe integer. */
  ids: number;
  /** Rows where it could be a text: a non-empty string. */
  strings: number;
  /** Characters of those strings. */
  chars: number;
}

export function newSample(name: string): FieldSample {
  return { name, rows: 0, ids: 0, strings: 0, chars: 0 };
}

/** Counts one row's value of a field. */
export function countValue(sample: FieldSample, value: unknown): void {
  if (value === undefined || value === null || value === '') return;
  sample.rows += 1;
  if (typeof value === 'string') {
    sample.ids += 1;
    sample.strings += 1;
    sample.chars += value.length;
  } else if (Number.isSafeInteger(value)) sample.ids += 1;
}

/** Names an id is commonly kept under, best first, compared without case, `_`, `-`, `.` or spaces. */
const ID_NAMES = ['id', 'docid', 'documentid', 'uuid', 'guid', 'uid', 'key', 'pk', 'recordid', 'rowid'];
/** `article_id`, `page-id`, `docId`, `itemID`, `row_uuid`, `doc_key`. */
const ID_LIKE = [/(?:^|[_\-. ])(?:id|uuid|guid|key)$/i, /[a-z0-9](?:Id|ID|Uuid|UUID|Key)$/];
/** Names a text is commonly kept under, best first. */
const TEXT_NAMES = [
  'text',
  'body',
  'content',
  'contents',
  'pagecontent',
  'fulltext',
  'rawtext',
  'document',
  'passage',
  'chunk',
  'paragraph',
  'article',
  'abstract',
  'description',
  'message',
  'sentence',
  'doc',
];
/** `body_text`, `page-content`, `mainBody`, `articleText`. */
const TEXT_LIKE = [/(?:^|[_\-. ])(?:text|body|content)$/i, /[a-z0-9](?:Text|Body|Content)$/];

const normal = (name: string) => name.toLowerCase().replace(/[_\-. ]/g, '');

/** The best name-matched field among `candidates`: the configured name in another case, a listed name, a pattern. */
function byName(
  candidates: readonly string[],
  wanted: string,
  names: readonly string[],
  like: readonly RegExp[],
): string | undefined {
  const exact = candidates.find((name) => normal(name) === normal(wanted));
  if (exact !== undefined) return exact;
  for (const listed of names) {
    const found = candidates.find((name) => normal(name) === listed);
    if (found !== undefined) return found;
  }
  return candidates.find((name) => like.some((pattern) => pattern.test(name)));
}

/**
 * A guess at the id field among `fields` (not `wanted` itself, nor `exclude`): by name, and for
 * JSONL samples only one held as a string or an integer in every row seen.
 */
export function guessIdField(
  fields: readonly FieldSample[],
  wanted: string,
  rows: number,
  exclude?: string,
): string | undefined {
  const candidates = fields
    .filter((field) => field.name !== wanted && field.name !== exclude && field.ids === rows)
    .map((field) => field.name);
  return byName(candidates, wanted, ID_NAMES, ID_LIKE);
}

/**
 * A guess at the text field among `fields` (not `wanted` itself, nor `exclude`), a string in every
 * row seen: by name, else (with values to go by) the field of clearly the longest strings.
 */
export function guessTextField(
  fields: readonly FieldSample[],
  wanted: string,
  rows: number,
  exclude?: string,
): string | undefined {
  const candidates = fields.filter(
    (field) => field.name !== wanted && field.name !== exclude && field.strings === rows,
  );
  const named = byName(
    candidates.map((field) => field.name),
    wanted,
    TEXT_NAMES,
    TEXT_LIKE,
  );
  if (named !== undefined || rows === 0) return named;
  const [longest, next] = [...candidates].sort((a, b) => b.chars - a.chars);
  // Obvious only when its strings are long and at least twice as long as any other field's.
  if (longest === undefined || longest.chars / rows < 16) return undefined;
  return next === undefined || longest.chars >= 2 * next.chars ? longest.name : undefined;
}

/** A field name as a shell argument. */
export function shellWord(name: string): string {
  return /^[\w.@%+=:,/-]+$/.test(name) ? name : `'${name.replaceAll("'", "'\\''")}'`;
}

/** `--id-field doc_id --text-field body` for the guesses made; '' when none. */
export function flagSuggestion(id: string | undefined, text: string | undefined): string {
  return [
    id === undefined ? '' : `--id-field ${shellWord(id)}`,
    text === undefined ? '' : `--text-field ${shellWord(text)}`,
  ]
    .filter((part) => part !== '')
    .join(' ');
}

/** Field names listed for a message: JSON-quoted, the first `max`, then how many more. */
export function quotedNames(names: readonly string[], max = 20): string {
  const shown = names.slice(0, max).map((name) => JSON.stringify(name));
  if (names.length > max) shown.push(`… ${names.length - max} more`);
  return shown.join(', ') || '(none)';
}

/** A row's field names for a reject reason, kept short: `(fields: doc_id, body)`, `(no fields)`. */
export function rowFields(record: Record<string, unknown>): string {
  const names = Object.keys(record);
  if (names.length === 0) return '(no fields)';
  const shown = names
    .slice(0, 8)
    .map((name) =>
      /^[^\s,()"]{1,40}$/.test(name)
        ? name
        : JSON.stringify(name.length > 40 ? `${name.slice(0, 39)}…` : name),
    );
  if (names.length > 8) shown.push(`… ${names.length - 8} more`);
  return `(fields: ${shown.join(', ')})`;
}
