import { describe, expect, it } from 'vitest';
import { chunkDocument, contentHash, utf8Length } from '../../src/chunking/index.js';
import { ConfigError } from '../../src/errors.js';
import { doc, expectValidChunks } from './helpers.js';

const sentence = (n: number) => `Sentence number ${n} says something plain about the pipeline.`;
const paragraph = (p: number, sentences: number) =>
  Array.from({ length: sentences }, (_, s) => sentence(p * 100 + s)).join(' ');

describe('chunkDocument', () => {
  it('keeps a document that fits as one chunk with its hash', () => {
    const text = 'A short document.\n\nWith two paragraphs.';
    const chunks = chunkDocument(doc(text), { model: 'm', maxTokens: 400 });
    expect(chunks).toEqual([
      {
        documentId: 'doc-1',
        index: 0,
        text,
        start: 0,
        end: text.length,
        bytes: utf8Length(text),
        tokens: utf8Length(text),
        hash: contentHash('m', text),
      },
    ]);
  });

  it('gives an empty document no chunks', () => {
    expect(chunkDocument(doc(''), { model: 'm', maxTokens: 400 })).toEqual([]);
  });

  it('cuts at paragraph boundaries when paragraphs fit', () => {
    const text = Array.from({ length: 12 }, (_, p) => paragraph(p, 3)).join('\n\n');
    const chunks = chunkDocument(doc(text), { model: 'm', maxTokens: 400 });
    expectValidChunks(text, chunks, 400);
    expect(chunks.length).toBeGreaterThan(3);
    // Every chunk but the last ends with a blank line, i.e. at a paragraph boundary.
    for (const chunk of chunks.slice(0, -1)) expect(chunk.text).toMatch(/\.\n\n$/);
    // Greedy: two consecutive chunks could not have been one.
    for (let i = 1; i < chunks.length; i++) {
      expect(chunks[i - 1]!.tokens + chunks[i]!.bytes).toBeGreaterThan(400);
    }
  });

  it('cuts at sentence ends when a paragraph is over budget', () => {
    const text = `${paragraph(1, 2)}\n\n${paragraph(2, 30)}\n\n${paragraph(3, 2)}`;
    const chunks = chunkDocument(doc(text), { model: 'm', maxTokens: 240 });
    expectValidChunks(text, chunks, 240);
    for (const chunk of chunks.slice(0, -1)) expect(chunk.text).toMatch(/\.\s+$/);
    // The short first paragraph is not merged with the start of the long one.
    expect(chunks[0]!.text).toBe(`${paragraph(1, 2)}\n\n`);
  });

  it('cuts CJK text after full-width terminators, which need no space', () => {
    const text = '我们今天讨论向量管道的设计。它需要稳定的批次编号！这样才能恢复运行？'.repeat(20);
    const chunks = chunkDocument(doc(text), { model: 'm', maxTokens: 150 });
    expectValidChunks(text, chunks, 150);
    for (const chunk of chunks.slice(0, -1)) expect(chunk.text).toMatch(/[。！？]$/);
  });

  it('treats single newlines as sentence-level boundaries', () => {
    const text = Array.from({ length: 40 }, (_, i) => `  const value${i} = compute(items[${i}])`).join('\n');
    const chunks = chunkDocument(doc(text), { model: 'm', maxTokens: 160 });
    expectValidChunks(text, chunks, 160);
    for (const chunk of chunks.slice(0, -1)) expect(chunk.text).toMatch(/\)\n {2}$/);
  });

  it('cuts between words when a sentence is over budget', () => {
    const text = Array.from({ length: 300 }, (_, i) => `word${i % 7}`).join(' ');
    const chunks = chunkDocument(doc(text), { model: 'm', maxTokens: 120 });
    expectValidChunks(text, chunks, 120);
    for (const chunk of chunks.slice(0, -1)) expect(chunk.text).toMatch(/^word\d.* $/);
    expect(Math.min(...chunks.slice(0, -1).map((c) => c.bytes))).toBeGreaterThanOrEqual(114);
  });

  it('hard-cuts only a word that alone is over budget, never inside a surrogate pair', () => {
    const giant = '😀a1'.repeat(400);
    const text = `before the word ${giant} after the word`;
    const chunks = chunkDocument(doc(text), { model: 'm', maxTokens: 150 });
    expectValidChunks(text, chunks, 150);
    expect(chunks[0]!.text).toBe('before the word ');
    expect(chunks.at(-1)!.text).toBe('after the word');
    // The pieces of the word carry no other word (its trailing space goes with its last piece).
    expect(chunks.slice(1, -1).every((c) => !c.text.trimEnd().includes(' '))).toBe(true);
  });

  it('prefers character class boundaries inside a giant word', () => {
    const text = 'abcdefgh12345678'.repeat(300);
    const chunks = chunkDocument(doc(text), { model: 'm', maxTokens: 64 });
    expectValidChunks(text, chunks, 64);
    // Cuts fall between the letter and digit groups, not inside them.
    for (const chunk of chunks.slice(0, -1)) expect(chunk.text).toMatch(/(?:h|8)$/);
  });

  it('keeps a long unbroken run whole when it fits the budget', () => {
    const run = 'a'.repeat(3000);
    const text = `start ${run} middle end`;
    const chunks = chunkDocument(doc(text), { model: 'm', maxTokens: 7000 });
    expect(chunks.map((c) => c.text)).toEqual([text]);
  });

  it('keeps grapheme clusters whole at hard cuts where it can', () => {
    const family = '👨‍👩‍👧‍👦';
    const text = family.repeat(200);
    const chunks = chunkDocument(doc(text), { model: 'm', maxTokens: 100 });
    expectValidChunks(text, chunks, 100);
    for (const chunk of chunks) expect(chunk.text.replaceAll(family, '')).toBe('');
  });

  it('chunks a large single-word document in linear time', () => {
    const text = 'QUJD'.repeat(50_000) + 'x9+/'.repeat(50_000);
    const started = performance.now();
    const chunks = chunkDocument(doc(text), { model: 'm', maxTokens: 2000 });
    expect(performance.now() - started).toBeLessThan(5_000);
    expectValidChunks(text, chunks, 2000);
  });

  it('is deterministic and hashes with the model', () => {
    const text = Array.from({ length: 30 }, (_, p) => paragraph(p, 4)).join('\n\n');
    const a = chunkDocument(doc(text), { model: 'model-a', maxTokens: 320 });
    expect(chunkDocument(doc(text), { model: 'model-a', maxTokens: 320 })).toEqual(a);
    const b = chunkDocument(doc(text), { model: 'model-b', maxTokens: 320 });
    expect(b.map((c) => c.text)).toEqual(a.map((c) => c.text));
    expect(b.map((c) => c.hash)).not.toEqual(a.map((c) => c.hash));
    for (const chunk of a) expect(chunk.hash).toBe(contentHash('model-a', chunk.text));
  });

  it('treats special-token text as plain text', () => {
    const text = 'Documents may contain <|endoftext|> or <|im_start|> literally. '.repeat(40);
    const chunks = chunkDocument(doc(text), { model: 'm', maxTokens: 120 });
    expectValidChunks(text, chunks, 120);
  });

  it('rejects budgets that cannot hold every character', () => {
    for (const maxTokens of [0, 3, 2.5]) {
      expect(() => chunkDocument(doc('text'), { model: 'm', maxTokens })).toThrow(ConfigError);
    }
  });
});
