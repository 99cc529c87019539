/**
 * The gateway counts tokens its own way (the emulator's models count "pieces", not cl100k). At
 * default settings, on English prose and on a hostile multilingual mix, against a model that cuts
 * over-long input silently and one that rejects it: no stored vector is of a cut text, every
 * document's rows spell its text and are numbered 0..k-1, and the summary says what budget was used.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DEFAULT_EMBEDDING_MODELS,
  EMULATOR_API_KEY,
  embeddingFor,
  type RunningEmulator,
  startEmulator,
} from '../../src/emulator/index.js';
import { runCli } from '../helpers/cli.js';
import { type DatasetRow, readDataset } from '../helpers/duckdb.js';
import { tempFolder } from '../helpers/temp.js';

const WORDS =
  'the pipeline reads documents and splits them into chunks that fit the model while a gateway answers with vectors for every batch of inputs'.split(
    ' ',
  );

/** Deterministic English prose: paragraphs of sentences, documents from a line to about 12 KB. */
function proseCorpus(documents: number): Map<string, string> {
  let state = 7;
  const rand = () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
  const sentence = () => {
    const words = Array.from(
      { length: 6 + Math.floor(rand() * 14) },
      () => WORDS[Math.floor(rand() * WORDS.length)],
    );
    return `${words.join(' ')}.`;
  };
  const corpus = new Map<string, string>();
  for (let d = 0; d < documents; d++) {
    const paragraphs = Array.from({ length: 1 + Math.floor(rand() * rand() * 30) }, () =>
      Array.from({ length: 2 + Math.floor(rand() * 6) }, sentence).join(' '),
    );
    corpus.set(`doc-${d}`, paragraphs.join('\n\n'));
  }
  return corpus;
}

/** The same texts in several scripts, so the gateway's tokens per byte differ from document to document. */
function multilingualCorpus(): Map<string, string> {
  const pieces = [
    'The quick brown fox jumps over the lazy dog while the pipeline embeds it. ',
    'Быстрая коричневая лиса перепрыгивает через ленивую собаку. ',
    'الثعلب البني السريع يقفز فوق الكلب الكسول بينما يعمل خط المعالجة. ',
    '敏捷的棕色狐狸跳过了懒狗，管道正在处理向量。',
    '👨‍👩‍👧‍👦🇫🇷👍🏽 emoji and flags 🎉✨ ',
    'e\u0301te\u0301 cafe\u0301 na\u0308ive re\u0301sume\u0301 ',
    'const value = compute(items[index]) + offset; // code-like\r\n',
  ];
  const corpus = new Map<string, string>();
  for (let d = 0; d < 40; d++) {
    const piece = pieces[d % pieces.length]!;
    corpus.set(`ml-${d}`, piece.repeat(1 + ((d * 37) % 90)));
  }
  return corpus;
}

let emulator: RunningEmulator;
const root = await tempFolder('embedpipe-count-');

const REJECTING = {
  id: 'emu/reject-512',
  dims: 64,
  contextLength: 512,
  overLong: 'reject' as const,
  pricePerToken: '0.0000001',
  providers: ['alpha'],
};

beforeAll(async () => {
  emulator = await startEmulator({ models: [...DEFAULT_EMBEDDING_MODELS, REJECTING] });
});
afterAll(async () => {
  await emulator.close();
});

async function runOn(name: string, corpus: Map<string, string>, model: string, ...extra: string[]) {
  const input = join(root, `${name}.jsonl`);
  const lines = [...corpus].map(([id, text]) => JSON.stringify({ id, text }));
  await writeFile(input, `${lines.join('\n')}\n`);
  const out = join(root, name);
  const result = await runCli(['run', '--input', input, '--model', model, '--out', out, '--json', ...extra], {
    EMBEDPIPE_BASE_URL: emulator.baseUrl,
    EMBEDPIPE_API_KEY: EMULATOR_API_KEY,
  });
  expect(result.code, result.stderr).toBe(0);
  return { summary: JSON.parse(result.stdout), rows: await readDataset(out), out };
}

function expectWholeVectors(rows: DatasetRow[], corpus: Map<string, string>, model: string, dims: number) {
  const byDoc = new Map<string, DatasetRow[]>();
  for (const row of rows) byDoc.set(row.id, [...(byDoc.get(row.id) ?? []), row]);
  expect(byDoc.size).toBe(corpus.size);
  for (const [id, text] of corpus) {
    const docRows = byDoc.get(id)!;
    expect(
      docRows.map((r) => r.chunk_index),
      id,
    ).toEqual(docRows.map((_, i) => i));
    expect(docRows.map((r) => r.text).join(''), id).toBe(text);
    // A cut input's vector is the vector of its prefix: equality with the full text's proves it was whole.
    for (const row of docRows)
      expect(row.embedding, `${id}#${row.chunk_index}`).toEqual(embeddingFor(model, row.text, dims));
  }
}

describe('chunks that fit the gateway’s own count, at default settings', () => {
  it('English prose against a model that truncates silently: nothing stored is cut', async () => {
    const corpus = proseCorpus(80);
    const before = emulator.stats.truncated;
    const { summary, rows } = await runOn('prose-truncating', corpus, 'emu/embed-small');
    expectWholeVectors(rows, corpus, 'emu/embed-small', 384);
    expect(emulator.stats.truncated - before).toBe(0);
    expect(summary.sizing).toMatchObject({ budgetTokens: 460, basis: 'probes' });
    expect(summary.sizing.calibration.requests).toBeGreaterThan(0);
    // Chunks are as large as the learned count allows, not the byte bound's one token per letter.
    expect(summary.sizing.tokensPerChar.alnum).toBeLessThan(0.5);
  });

  it('English prose against a model that rejects over-long input: nothing fails, nothing is cut', async () => {
    const corpus = proseCorpus(60);
    const { summary, rows } = await runOn('prose-rejecting', corpus, REJECTING.id);
    expect(summary.failures).toBe(0);
    expectWholeVectors(rows, corpus, REJECTING.id, 64);
  });

  it('a multilingual mix against the truncating model: documents cut while learning are re-embedded whole', async () => {
    const corpus = multilingualCorpus();
    const { summary, rows } = await runOn('multilingual-truncating', corpus, 'emu/embed-small');
    expect(summary.failures).toBe(0);
    expectWholeVectors(rows, corpus, 'emu/embed-small', 384);
  });

  it('a re-run of a finished dataset plans the same chunks from the saved calibration and sends nothing', async () => {
    const corpus = proseCorpus(30);
    const first = await runOn('rerun', corpus, 'emu/embed-small');
    const inputs = emulator.stats.inputs;
    const second = await runOn('rerun', corpus, 'emu/embed-small');
    expect(emulator.stats.inputs).toBe(inputs);
    expect(second.summary.batches.embedded).toBe(0);
    expect(second.rows).toEqual(first.rows);
  });

  it('a re-run on a changed corpus leaves exactly the new corpus in the compacted dataset', async () => {
    const before = proseCorpus(40);
    const first = await runOn('changed', before, 'emu/embed-small');
    const after = new Map(before);
    after.delete('doc-3');
    after.set('doc-7', `${before.get('doc-7')} One more sentence at the end.`);
    after.set('doc-new', 'A document that was not there before.');
    const inputs = emulator.stats.inputs;
    const rerun = await runOn('changed', after, 'emu/embed-small');
    // Only the changed and the new document's chunks were sent; everything else was reused by hash.
    const changedRows = rerun.rows.filter((r) => r.id === 'doc-7' || r.id === 'doc-new').length;
    expect(emulator.stats.inputs - inputs).toBeGreaterThan(0);
    expect(emulator.stats.inputs - inputs).toBeLessThanOrEqual(changedRows);
    expectWholeVectors(rerun.rows, after, 'emu/embed-small', 384);
    // Documents that did not change keep their rows (the saved calibration plans them the same way).
    const unchanged = (rows: DatasetRow[]) =>
      rows.filter((r) => !['doc-3', 'doc-7', 'doc-new'].includes(r.id));
    expect(unchanged(rerun.rows)).toEqual(unchanged(first.rows));
  });

  it('a re-run with another plan reuses every vector the folder holds by content hash: nothing is sent', async () => {
    const corpus = proseCorpus(40);
    const first = await runOn('replanned', corpus, 'emu/embed-small', '--max-inputs', '16');
    const inputs = emulator.stats.inputs;
    // Other request limits: every batch id changes, no batch is "already done".
    const second = await runOn('replanned', corpus, 'emu/embed-small', '--max-inputs', '8');
    expect(second.summary.batches.resumed).toBe(0);
    expect(second.summary.reused).toBe(first.rows.length);
    expect(emulator.stats.inputs).toBe(inputs);
    const sorted = (rows: DatasetRow[]) =>
      [...rows].sort((a, b) => a.id.localeCompare(b.id) || a.chunk_index - b.chunk_index);
    expect(sorted(second.rows)).toEqual(sorted(first.rows));
  });
});
