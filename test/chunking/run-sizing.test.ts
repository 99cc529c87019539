import { describe, expect, it } from 'vitest';
import { profileOf } from '../../src/chunking/index.js';
import { RunSizing } from '../../src/chunking/run-sizing.js';
import { sizingFor } from '../helpers/sizing.js';

const document = (id: string, text: string) => ({ id, text, source: 't', line: 1 });
const prose = (n: number) =>
  Array.from({ length: n }, (_, i) => `Sentence ${i} of a plain document about embeddings.`).join(' ');

const sizing = (tokensPerByte: number) => sizingFor('m', 100, tokensPerByte, 110);

describe('RunSizing', () => {
  it('probes a document rich in a feature nothing measured, once; other documents need no await', async () => {
    // At the byte bound: no feature measured yet. (A probe is a prefix of at most the budget's bytes.)
    const s = sizingFor('m', 1000, 1, 1100);
    const probed: string[] = [];
    s.measureWith(async (text) => {
      probed.push(text);
      return Math.ceil(Buffer.byteLength(text) * 0.6);
    });
    const cjk = '中文文本测试内容'.repeat(60);
    const probing = s.probeFor(document('a', cjk));
    expect(probing).toBeInstanceOf(Promise);
    await probing;
    expect(probed.length).toBe(1);
    expect(probed[0]!.startsWith('中文')).toBe(true);
    expect(s.calibration.current.reason).toBe('probes');
    // That feature is probed: nothing to await for it again, nor for a text too short to measure.
    expect(s.probeFor(document('b', cjk))).toBeUndefined();
    expect(s.probeFor(document('c', '中文'))).toBeUndefined();
    expect(probed.length).toBe(1);
  });

  it('plans each document with its epoch and estimates tokens from bytes', () => {
    const s = sizing(0.25);
    const chunks = s.plan(document('a', prose(20)));
    expect(chunks.length).toBeGreaterThan(1);
    for (const chunk of chunks) {
      expect(chunk.bytes).toBeLessThanOrEqual(400);
      expect(chunk.tokens).toBeLessThanOrEqual(100);
      expect(chunk.tokens).toBe(Math.ceil(chunk.bytes * 0.25));
    }
  });

  it('learns from usage and names the documents whose chunks no longer fit', () => {
    const s = sizing(0.25);
    const a = s.plan(document('a', prose(20)));
    const b = s.plan(document('b', 'short'));
    // The gateway counted far more than 0.25 per byte: a's chunks (near 400 bytes) cannot fit now.
    const bytes = a.reduce((sum, c) => sum + c.bytes, 0) + b[0]!.bytes;
    const redo = s.learn([...a, ...b], Math.ceil(bytes * 0.5));
    expect([...redo]).toEqual(['a']);
    expect(s.calibration.epochs.at(-1)).toMatchObject({ fromDocument: 2, reason: 'usage' });
  });

  it('treats a single input whose usage reached the context length as cut', () => {
    const s = sizing(0.25);
    const [first] = s.plan(document('a', prose(20)));
    expect([...s.learn([first!], 110)]).toEqual(['a']);
    expect(s.calibration.current.reason).toBe('cut');
  });

  it('re-plans a document whole for one batch; its old chunks are stale everywhere', () => {
    const s = sizing(0.25);
    const old = s.plan(document('a', prose(20)));
    s.calibration.observe(
      { profile: profileOf(prose(20)), tokens: Buffer.byteLength(prose(20)) * 0.5, single: true },
      1,
    );
    const fresh = s.replan('a', 'batch-1')!;
    expect(fresh.map((c) => c.index)).toEqual(fresh.map((_, i) => i));
    expect(fresh.map((c) => c.text).join('')).toBe(prose(20));
    expect(fresh.length).toBeGreaterThan(old.length);
    expect(s.isStale(old[0]!, 'batch-1')).toBe(true);
    expect(s.isStale(fresh[0]!, 'batch-1')).toBe(false);
    expect(s.isStale(fresh[0]!, 'batch-2')).toBe(true);
    // Another batch cannot take the document over.
    expect(s.replan('a', 'batch-2')).toBeUndefined();
    expect(s.owners()).toEqual(new Map([['a', 'batch-1']]));
  });

  it('prepares a batch: stale chunks dropped, chunks over the current budget re-planned', () => {
    const s = sizing(0.25);
    const a = s.plan(document('a', prose(20)));
    const b = s.plan(document('b', 'short text'));
    expect(s.prepare('x', [...a, ...b])).toEqual([...a, ...b]);
    s.calibration.observe(
      { profile: profileOf(prose(20)), tokens: Buffer.byteLength(prose(20)) * 0.5, single: true },
      2,
    );
    const sent = s.prepare('x', [...a, ...b]);
    expect(sent.filter((c) => c.documentId === 'a').every((c) => s.calibration.fits(c.text))).toBe(true);
    expect(sent.at(-1)).toBe(b[0]);
    // The same chunks in another batch are stale now.
    expect(s.prepare('y', a)).toEqual([]);
  });

  it('forgets a document once all its planned chunks are finished', () => {
    const s = sizing(0.25);
    const a = s.plan(document('a', prose(20)));
    s.release(a);
    expect(s.replan('a', 'x')).toBeUndefined();
  });

  describe('a calibration restored from earlier runs', () => {
    const cheap = sizing(0.25);
    const text = prose(20);
    /** Epochs of 0.25 and then 0.5 tokens a byte: a document planned in the first does not fit the second. */
    const state = () => {
      const s = sizing(0.25);
      s.calibration.epochFor(0, 'a');
      s.calibration.observe(
        { profile: profileOf(text), tokens: Buffer.byteLength(text) * 0.5, single: true },
        1,
      );
      s.calibration.epochFor(1, 'b');
      return JSON.parse(JSON.stringify(s.calibration.state()));
    };
    const restored = () =>
      RunSizing.restore({ model: 'm', budgetTokens: 100, contextLength: 110, overlapTokens: 0 }, state());

    it('cuts a document as its epoch did: nothing re-planned for an epoch it did not open', () => {
      const s = restored();
      const a = s.plan(document('a', text));
      expect(a.map((c) => c.text)).toEqual(cheap.plan(document('a', text)).map((c) => c.text));
      expect(s.calibration.fits(a[0]!.text)).toBe(false);
      expect(s.prepare('x', a)).toEqual(a);
      // Usage within what the latest epoch expects teaches nothing: no document to redo.
      expect([...s.learn(a, Math.ceil(Buffer.byteLength(text) * 0.4))]).toEqual([]);
      expect(s.calibration.state().replans).toBeUndefined();
    });

    it('re-plans for an epoch this run opened, and records it: the next run plans the document so', () => {
      const s = restored();
      const a = s.plan(document('a', text));
      s.calibration.observe(
        { profile: profileOf(text), tokens: Buffer.byteLength(text) * 0.8, single: true },
        1,
      );
      const sent = s.prepare('x', a);
      expect(sent).not.toEqual(a);
      expect(sent.every((c) => s.calibration.fits(c.text))).toBe(true);
      const saved = JSON.parse(JSON.stringify(s.calibration.state()));
      expect(saved.replans.map((r: { ids: string[] }) => r.ids)).toEqual([['a']]);
      const next = RunSizing.restore(
        { model: 'm', budgetTokens: 100, contextLength: 110, overlapTokens: 0 },
        saved,
      );
      const planned = next.plan(document('a', text));
      expect(planned.map((c) => c.text)).toEqual(sent.map((c) => c.text));
      expect(next.calibration.isReplanned('a')).toBe(true);
      expect(next.prepare('y', planned)).toEqual(planned);
    });

    it('assumes a re-plan under the latest epoch where the calibration records none (an older version)', () => {
      const s = restored();
      s.assumeReplanned('a');
      const a = s.plan(document('a', text));
      expect(a.every((c) => s.calibration.fits(c.text))).toBe(true);
      expect(a.length).toBeGreaterThan(cheap.plan(document('a', text)).length);
    });
  });

  it('restores owners recorded by committed parts', () => {
    const s = sizing(0.25);
    const a = s.plan(document('a', prose(20)));
    s.restoreReplan('a', 'committed');
    expect(s.isStale(a[0]!, 'other')).toBe(true);
    expect(s.isStale(a[0]!, 'committed')).toBe(false);
    expect(s.owners()).toEqual(new Map([['a', 'committed']]));
    expect(s.earlierReplans()).toEqual(new Map());
  });

  it('counts a re-plan the calibration records, or one carried over, by key alone: nothing is stale for it', () => {
    const s = sizing(0.25);
    s.calibration.recordReplan('a', s.calibration.current);
    const a = s.plan(document('a', prose(20)));
    s.restoreReplan('a', 'attempt');
    s.earlierReplan('b', 'carried');
    const b = s.plan(document('b', prose(20)));
    expect(s.isStale(a[0]!, 'other')).toBe(false);
    expect(s.isStale(b[0]!, 'other')).toBe(false);
    expect(s.owners()).toEqual(new Map());
    expect(s.earlierReplans()).toEqual(
      new Map([
        ['a', 'attempt'],
        ['b', 'carried'],
      ]),
    );
  });
});
