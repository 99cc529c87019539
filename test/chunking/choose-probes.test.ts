import { describe, expect, it } from 'vitest';
import {
  CALIBRATION_PROBES,
  chooseProbes,
  MIN_CALIBRATION_PROBES,
  type ProbeCandidate,
  probeCount,
} from '../../src/chunking/calibrate.js';
import { ASCII_FEATURES } from '../../src/chunking/calibration.js';
import { CLASSES, featureShares, MEASURED_SHARE, profileOf } from '../../src/chunking/index.js';

/** A text whose features are mostly one script's (its feature share checked below). */
const SCRIPTS: Record<string, string> = {
  alnum: 'The quick brown fox jumps over the lazy dog. ',
  latin: 'éàüöñçøåæœ ',
  marks: 'a\u0301\u0302\u0303e\u0300\u0304\u0306 ',
  greek_cyrillic: 'αβγδεζηθικλμ ',
  rtl: 'مرحبا بالعالم ',
  other_2byte: 'Աբգդեզէըթ ',
  cjk: '漢字文化圏中国語 ',
  kana: 'ひらがなカタカナ ',
  hangul: '한국어문장입니다 ',
  punctuation: '—…“”‘’•‰ ',
  other_3byte: 'हिन्दीभाषा ',
  emoji: '😀😃😄😁😆 ',
  other_4byte: '𝐀𝐁𝐂𝐃𝐄𝐅 ',
};

const candidate = (text: string): ProbeCandidate => ({ text, profile: profileOf(text) });
const FEATURES = CLASSES.map((_, k) => k).filter((k) => k === 0 || k >= ASCII_FEATURES);

/** The features the chosen documents measure (a single input holding MEASURED_SHARE of one). */
function measuredBy(documents: readonly ProbeCandidate[], chosen: readonly number[]): string[] {
  return FEATURES.filter((k) =>
    chosen.some((i) => featureShares(documents[i]!.profile)[k]! >= MEASURED_SHARE),
  ).map((k) => CLASSES[k]!);
}

/** A window like a multilingual corpus's start: mostly English, one document in each other script. */
function window(): ProbeCandidate[] {
  const documents: ProbeCandidate[] = [];
  for (let i = 0; i < 200; i++) documents.push(candidate(`${SCRIPTS.alnum!.repeat(8)} #${i}, a_b; c-d!`));
  for (const [n, text] of Object.values(SCRIPTS).entries())
    documents.splice(10 + n * 13, 0, candidate(text.repeat(20)));
  return documents;
}

describe('chooseProbes', () => {
  it('measures every feature some document of the window can measure, and probes each ASCII class', () => {
    const documents = window();
    // Each script's document does measure its feature (so the window offers all thirteen).
    for (const [name, text] of Object.entries(SCRIPTS)) {
      const k = CLASSES.indexOf(name as (typeof CLASSES)[number]);
      expect(featureShares(profileOf(text.repeat(20)))[k], name).toBeGreaterThanOrEqual(MEASURED_SHARE);
    }
    const chosen = chooseProbes(documents, CALIBRATION_PROBES);
    expect(chosen).toHaveLength(CALIBRATION_PROBES);
    expect(measuredBy(documents, chosen)).toEqual(Object.keys(SCRIPTS));
    // The four ASCII classes (alnum, word, symbol, space) each got a document of their own.
    const ascii = chosen.filter((i) => featureShares(documents[i]!.profile)[0]! >= MEASURED_SHARE);
    expect(ascii.length).toBeGreaterThanOrEqual(ASCII_FEATURES);
  });

  it('takes the classes a probe can measure before the ones it cannot', () => {
    // Latin letters and combining marks only inside English (never half of a text); emoji and
    // other 4-byte scripts in documents of their own, later in the window.
    const documents = [
      candidate(`${SCRIPTS.alnum!.repeat(10)}é`),
      candidate(`${SCRIPTS.alnum!.repeat(10)}a\u0301`),
      ...['x = f(a, b); // c', '1 2 3 4 5 6 7 8', 'plain words only here', 'a  b   c    d'].map((t) =>
        candidate(t.repeat(12)),
      ),
      candidate(SCRIPTS.emoji!.repeat(20)),
      candidate(SCRIPTS.other_4byte!.repeat(20)),
    ];
    const chosen = chooseProbes(documents, 6);
    expect(measuredBy(documents, chosen)).toEqual(['alnum', 'emoji', 'other_4byte']);
    expect(chosen).not.toContain(0);
    expect(chosen).not.toContain(1);
  });

  it('fills the rest with documents spread over the window, in corpus order, each once', () => {
    const documents = Array.from({ length: 100 }, (_, i) => candidate(`${SCRIPTS.alnum!.repeat(4)} ${i}`));
    const chosen = chooseProbes(documents, 12);
    expect(chosen).toHaveLength(12);
    expect(new Set(chosen).size).toBe(12);
    expect(chosen).toEqual([...chosen].sort((a, b) => a - b));
    // Every eighth (100 / 12) from the start, after the classes' richest.
    expect(chosen).toEqual(expect.arrayContaining([0, 8, 16, 24]));
    expect(chooseProbes(documents.slice(0, 3), 12)).toEqual([0, 1, 2]);
    expect(chooseProbes([], 12)).toEqual([]);
  });
});

describe('probeCount', () => {
  const prose = Array.from({ length: 256 }, (_, i) =>
    candidate(`${SCRIPTS.alnum!.repeat(6)} “Quoted”, item #${i}: a_b; c-d!\r\n`),
  );

  it('sends one wave of probes where it holds a document of every class the window has (prose)', () => {
    expect(probeCount(prose)).toBe(MIN_CALIBRATION_PROBES);
    // Every class then has its richest document among the chosen, with room for spread ones.
    const chosen = chooseProbes(prose, probeCount(prose));
    expect(chosen).toHaveLength(MIN_CALIBRATION_PROBES);
  });

  it('sends them all where the window holds more classes than one wave (a multilingual start)', () => {
    expect(probeCount(window())).toBe(CALIBRATION_PROBES);
    const chosen = chooseProbes(window(), probeCount(window()));
    expect(measuredBy(window(), chosen)).toEqual(Object.keys(SCRIPTS));
  });

  it('counts classes, not documents: the line is at MIN_CALIBRATION_PROBES classes', () => {
    const scripts = ['latin', 'marks', 'greek_cyrillic', 'rtl', 'cjk', 'kana'];
    const withScripts = (n: number) => [
      ...prose,
      ...scripts.slice(0, n).map((name) => candidate(SCRIPTS[name]!.repeat(20))),
    ];
    const classesIn = (documents: ProbeCandidate[]) =>
      CLASSES.filter((_, k) => documents.some(({ profile }) => profile[k]! > 0)).length;
    const atLine = withScripts(MIN_CALIBRATION_PROBES - classesIn(prose));
    expect(classesIn(atLine)).toBe(MIN_CALIBRATION_PROBES);
    expect(probeCount(atLine)).toBe(MIN_CALIBRATION_PROBES);
    const past = withScripts(MIN_CALIBRATION_PROBES - classesIn(prose) + 1);
    expect(probeCount(past)).toBe(CALIBRATION_PROBES);
    // A short window is probed whole, whatever the count.
    expect(chooseProbes(prose.slice(0, 3), probeCount(prose))).toEqual([0, 1, 2]);
  });
});
