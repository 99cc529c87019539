import { describe, expect, it } from 'vitest';
import {
  BYTE_BOUND_WEIGHTS,
  CLASSES,
  estimate,
  profileOf,
  TokenCalibration,
} from '../../src/chunking/index.js';

/** An observation of a text the gateway counted as `tokens`. */
const seen = (text: string, tokens: number, single = true) => ({ profile: profileOf(text), tokens, single });

const PROSE = 'The pipeline reads documents and splits them into chunks that fit the model. '.repeat(6);
const CODE = 'if (a[i] != b[j]) { x += (y * 2); } // {}[]()<>;;\n'.repeat(8);
const ARABIC = 'الثعلب البني السريع يقفز فوق الكلب الكسول. '.repeat(6);
/** A gateway that counts a token per 4 ASCII letters, per symbol, per non-ASCII character. */
const gatewayCount = (text: string) => {
  const profile = profileOf(text);
  const nonAscii = profile.slice(4).reduce((a, b) => a + b, 0);
  return Math.ceil(profile[0]! / 4) + profile[2]! + nonAscii;
};

describe('TokenCalibration', () => {
  it('starts at the byte bound: nothing planned with it can be cut by a byte-level tokenizer', () => {
    const calibration = new TokenCalibration('m', 460);
    expect(calibration.isPrior).toBe(true);
    expect(calibration.current).toMatchObject({ weights: BYTE_BOUND_WEIGHTS, budgetTokens: 460 });
    expect(calibration.estimate('héllo 😀')).toBe(Buffer.byteLength('héllo 😀'));
    expect(calibration.fits('a'.repeat(460))).toBe(true);
    expect(calibration.fits('a'.repeat(461))).toBe(false);
  });

  it('fits per-class weights from probes and covers every probe, with headroom', () => {
    const calibration = new TokenCalibration('m', 1000);
    const probes = [PROSE, CODE, ARABIC].map((text) => seen(text, gatewayCount(text)));
    calibration.calibrate(probes);
    expect(calibration.isPrior).toBe(false);
    for (const text of [PROSE, CODE, ARABIC]) {
      const estimated = calibration.estimate(text);
      expect(estimated).toBeGreaterThanOrEqual(gatewayCount(text));
      // Tight enough to size chunks well: not the byte bound.
      expect(estimated).toBeLessThan(Buffer.byteLength(text) * 0.75);
    }
    // Emoji were never seen: their class keeps the byte bound.
    expect(calibration.current.weights[CLASSES.indexOf('emoji')]).toBe(4);
    expect(calibration.takeChange()).toBe(true);
    expect(calibration.takeChange()).toBe(false);
  });

  it('keeps the prior when no probe reported usage, and ignores probes too small to tell', () => {
    const calibration = new TokenCalibration('m', 1000);
    calibration.calibrate([]);
    calibration.calibrate([seen('tiny', 3)]);
    expect(calibration.isPrior).toBe(true);
  });

  it('refits on usage above the estimate and opens an epoch at the next document to plan', () => {
    const calibration = new TokenCalibration('m', 1000);
    calibration.calibrate([seen(PROSE, gatewayCount(PROSE))]);
    const before = calibration.current;
    expect(calibration.observe(seen(PROSE, gatewayCount(PROSE), false), 10)).toBe(false);
    // Code counts far more per character than prose: the envelope must rise to cover it.
    expect(calibration.observe(seen(PROSE + CODE, gatewayCount(PROSE + CODE), false), 10)).toBe(true);
    expect(calibration.epochs.map((e) => e.fromDocument)).toEqual([0, 10]);
    expect(calibration.estimate(PROSE + CODE)).toBeGreaterThanOrEqual(gatewayCount(PROSE + CODE));
    // Documents planned before the change keep their epoch: a re-run plans them the same way.
    expect(calibration.epochFor(9, 'd9')).toBe(before);
    expect(calibration.epochFor(10, 'd10')).toBe(calibration.current);
    // Evidence only raises the envelope.
    calibration.current.weights.forEach((w, k) => {
      expect(w).toBeGreaterThanOrEqual(before.weights[k]!);
    });
    // A second change before any document was planned with the first replaces it.
    calibration.observe(seen(CODE, gatewayCount(CODE) * 3), 10, 'rejection');
    expect(calibration.epochs.map((e) => e.fromDocument)).toEqual([0, 10]);
    expect(calibration.current.reason).toBe('rejection');
  });

  it('a probe of a new script moves its weight alone: the envelope is kept, its headroom not added again', () => {
    const calibration = new TokenCalibration('m', 1000);
    calibration.calibrate([seen(PROSE, gatewayCount(PROSE)), seen(CODE, gatewayCount(CODE))]);
    const before = calibration.current.weights;
    const rtl = CLASSES.indexOf('rtl');
    expect(calibration.learnProbe(seen(ARABIC, gatewayCount(ARABIC)), 7)).toBe(true);
    const after = calibration.current.weights;
    expect(after[rtl]).toBeLessThan(before[rtl]!);
    // Prose is estimated as before (Arabic's spaces and full stops too): a document planned under
    // the new epoch without Arabic in it is cut as under the old.
    after.forEach((w, k) => {
      if (k !== rtl) expect(w, CLASSES[k]).toBe(before[k]);
    });
    expect(calibration.estimate(ARABIC)).toBeGreaterThanOrEqual(gatewayCount(ARABIC));
  });

  it('takes a cut input at twice its estimate at least: its usage hides the real count', () => {
    const calibration = new TokenCalibration('m', 460);
    calibration.calibrate([seen(PROSE, gatewayCount(PROSE))]);
    const text = PROSE.repeat(10);
    const before = calibration.estimate(text);
    expect(calibration.observe(seen(text, 512), 3, 'cut')).toBe(true);
    expect(calibration.estimate(text)).toBeGreaterThanOrEqual(2 * before);
  });

  it('lowers the budget when a rejection names a smaller limit', () => {
    const calibration = new TokenCalibration('m', 7372);
    expect(calibration.limitStated(4000, 0.1, 0)).toBe(true);
    expect(calibration.current.budgetTokens).toBe(3600);
    expect(calibration.limitStated(8000, 0.1, 0)).toBe(false);
  });

  it('restores the epochs of the same model and budget only', () => {
    const calibration = new TokenCalibration('m', 1000);
    calibration.calibrate([seen(PROSE, gatewayCount(PROSE))]);
    calibration.observe(seen(CODE, gatewayCount(CODE)), 5);
    const state = calibration.state();
    const restored = TokenCalibration.restore(JSON.parse(JSON.stringify(state)), 'm', 1000);
    expect(restored.epochs).toEqual(calibration.epochs);
    expect(TokenCalibration.restore(state, 'other', 1000).isPrior).toBe(true);
    expect(TokenCalibration.restore(state, 'm', 900).isPrior).toBe(true);
    expect(TokenCalibration.restore(undefined, 'm', 1000).isPrior).toBe(true);
  });

  it('records re-planned documents with their epoch, restores them, and forgets those the corpus lost', () => {
    const calibration = new TokenCalibration('m', 1000);
    calibration.calibrate([seen(PROSE, gatewayCount(PROSE))]);
    const first = calibration.current;
    calibration.observe(seen(CODE, gatewayCount(CODE)), 5);
    calibration.takeChange();
    calibration.recordReplan('a', first);
    calibration.recordReplan('b', calibration.current);
    calibration.recordReplan('c', calibration.current);
    expect(calibration.takeChange()).toBe(true);
    calibration.recordReplan('c', calibration.current);
    expect(calibration.takeChange()).toBe(false);
    const state = JSON.parse(JSON.stringify(calibration.state()));
    expect(state.replans).toEqual([
      { weights: first.weights, budgetTokens: 1000, ids: ['a'] },
      { weights: calibration.current.weights, budgetTokens: 1000, ids: ['b', 'c'] },
    ]);
    const next = TokenCalibration.restore(state, 'm', 1000);
    expect(next.replanOf('a')).toMatchObject({ weights: first.weights, budgetTokens: 1000 });
    expect(next.replanOf('b')?.weights).toEqual(calibration.current.weights);
    expect(next.replanOf('d')).toBeUndefined();
    expect(next.isReplanned('c')).toBe(true);
    // 'c' was never planned in this run: a deleted document's record goes once the corpus ends.
    expect(next.takeChange()).toBe(false);
    next.corpusEnded();
    expect(next.takeChange()).toBe(true);
    expect(
      next
        .state()
        .replans?.flatMap((r) => r.ids)
        .sort(),
    ).toEqual(['a', 'b']);
    // Mid-run (the corpus not ended), an unplanned document's record is kept for a resumed run.
    expect(TokenCalibration.restore(state, 'm', 1000).state().replans).toEqual(state.replans);
  });

  it('says whether this run opened an epoch of its own', () => {
    const calibration = new TokenCalibration('m', 1000);
    calibration.calibrate([seen(PROSE, gatewayCount(PROSE))]);
    expect(calibration.openedHere).toBe(false);
    calibration.observe(seen(CODE, gatewayCount(CODE)), 5);
    expect(calibration.openedHere).toBe(true);
    const next = TokenCalibration.restore(calibration.state(), 'm', 1000);
    expect(next.epochs.length).toBe(2);
    expect(next.openedHere).toBe(false);
  });

  it('estimates linearly in the class counts', () => {
    const weights = CLASSES.map(
      (name) => ({ alnum: 0.25, word: 0.5, symbol: 1, space: 0 })[name as string] ?? 1,
    );
    // 3 letters in 2 words, 1 symbol, 1 space, é, 中, 😀.
    expect(estimate(profileOf('ab c!é中😀'), weights)).toBe(0.75 + 1 + 1 + 0 + 1 + 1 + 1);
  });

  describe('epochs replayed by document id', () => {
    const ids = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);
    /** A run over `corpus` that opens an epoch (code met) before planning `opensAt`: its saved state. */
    const firstRun = (corpus: readonly string[], opensAt: number) => {
      const calibration = new TokenCalibration('m', 1000);
      calibration.calibrate([seen(PROSE, gatewayCount(PROSE))]);
      corpus.forEach((id, ordinal) => {
        if (ordinal === opensAt) calibration.observe(seen(CODE, gatewayCount(CODE)), ordinal);
        calibration.epochFor(ordinal, id);
      });
      return JSON.parse(JSON.stringify(calibration.state()));
    };
    /** Which saved epoch (by index) each document of `corpus` is planned with in the next run. */
    const replay = (state: unknown, corpus: readonly string[]) => {
      const next = TokenCalibration.restore(state as never, 'm', 1000);
      return Object.fromEntries(corpus.map((id, i) => [id, next.epochs.indexOf(next.epochFor(i, id))]));
    };
    const night1 = ids('d', 20);
    const state = firstRun(night1, 12);

    it('saves where each epoch starts: after which document, and its first documents', () => {
      expect(state.epochs.map((e: { fromDocument: number }) => e.fromDocument)).toEqual([0, 12]);
      expect(state.epochs[1]).toMatchObject({ after: 'd11', first: ids('d', 20).slice(12, 20) });
      expect(state.epochs[0].after).toBeUndefined();
      expect(state.epochs[0].first).toBeUndefined();
    });

    it('keeps every unchanged document in its epoch when documents are inserted or deleted before', () => {
      const expected = (corpus: readonly string[]) =>
        Object.fromEntries(
          corpus.filter((id) => night1.includes(id)).map((id) => [id, Number(id.slice(1)) >= 12 ? 1 : 0]),
        );
      const inserted = [...ids('new', 3), ...night1];
      const deleted = night1.filter((id) => id !== 'd3' && id !== 'd4' && id !== 'd5' && id !== 'd7');
      for (const corpus of [inserted, deleted]) {
        const planned = replay(state, corpus);
        expect(Object.fromEntries(Object.entries(planned).filter(([id]) => night1.includes(id)))).toEqual(
          expected(corpus),
        );
      }
    });

    it('finds the start without the document before it, or without its first ones', () => {
      const withoutAfter = night1.filter((id) => id !== 'd11');
      expect(replay(state, withoutAfter)['d12']).toBe(1);
      expect(replay(state, withoutAfter)['d10']).toBe(0);
      const withoutFirst = night1.filter((id) => Number(id.slice(1)) < 12 || Number(id.slice(1)) > 15);
      expect(replay(state, withoutFirst)['d16']).toBe(1);
      // A new document right after `after` is in the later epoch: a fresh run could plan it either way.
      const insertedAtStart = [...night1.slice(0, 12), 'new', ...night1.slice(12)];
      expect(replay(state, insertedAtStart)).toMatchObject({ d11: 0, new: 1, d12: 1 });
    });

    it('saves the epochs as this run placed them, for the next', () => {
      const night2 = [...ids('new', 3), ...night1];
      const next = TokenCalibration.restore(state, 'm', 1000);
      for (const [i, id] of night2.entries()) next.epochFor(i, id);
      expect(next.takeChange()).toBe(true);
      expect(next.state().epochs[1]).toMatchObject({
        fromDocument: 15,
        after: 'd11',
        first: night1.slice(12),
      });
      expect(next.takeChange()).toBe(false);
      // Resumed from a state saved mid-run, the same corpus plans the same.
      const partial = TokenCalibration.restore(state, 'm', 1000);
      for (const [i, id] of night1.slice(0, 14).entries()) partial.epochFor(i, id);
      const saved = JSON.parse(JSON.stringify(partial.state()));
      expect(replay(saved, night1)).toEqual(replay(state, night1));
    });

    it('starts an epoch saved without ids (an older version) at its ordinal', () => {
      const old = {
        ...state,
        epochs: state.epochs.map(({ after: _a, first: _f, ...epoch }: Record<string, unknown>) => epoch),
      };
      const planned = replay(old, [...ids('new', 3), ...night1]);
      expect([planned['d8'], planned['d9']]).toEqual([0, 1]);
    });

    it('plans by an epoch this run opens from its document on; one opened after the last starts after it', () => {
      const next = TokenCalibration.restore(state, 'm', 1000);
      for (const [i, id] of night1.slice(0, 5).entries()) next.epochFor(i, id);
      next.observe(seen(CODE, gatewayCount(CODE) * 2), 5, 'rejection');
      const opened = next.current;
      for (const [i, id] of night1.slice(5).entries()) expect(next.epochFor(5 + i, id)).toBe(opened);
      expect(next.state().epochs.map((e) => [e.fromDocument, e.reason, e.after])).toEqual([
        [0, 'probes', undefined],
        [5, 'rejection', 'd4'],
      ]);
      next.observe(seen(CODE, gatewayCount(CODE) * 4), 20, 'rejection');
      expect(next.state().epochs.at(-1)).toMatchObject({ fromDocument: 20, after: 'd19' });
      expect(next.state().epochs.at(-1)?.first).toBeUndefined();
    });
  });
});
