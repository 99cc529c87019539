/**
 * Calibration before planning: a few single-input requests of the corpus's own text tell how the
 * gateway counts it, so chunks are sized to fit from the first batch on. The learned epochs are
 * kept beside the dataset (`_calibration.json`), so a re-run plans the same chunks and resumes.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { RunSettings } from '../config/settings.js';
import { corpusOptions, openCorpus, resolveCorpusFormat } from '../corpus/index.js';
import type { SizingSummary } from '../domain.js';
import type { GatewayEmbedder } from '../embedding/gateway-embedder.js';
import type { Logger } from '../observability/logger.js';
import { CALIBRATION_FILE, writeFileAtomic } from '../output/index.js';
import {
  type CalibrationState,
  CLASSES,
  featureShares,
  isEvidence,
  MEASURED_SHARE,
  prefixWithinBytes,
  profileOf,
  type TokenObservation,
} from './index.js';
import type { RunSizing } from './run-sizing.js';

/**
 * Most probes sent: one per character class, so every script the corpus starts with is measured
 * before planning (twelve left emoji and other 4-byte scripts to lazy probes); few enough to cost
 * nothing.
 */
export const CALIBRATION_PROBES = 16;
/**
 * Fewest probes: a document for each of the four ASCII classes and as many spread over the window,
 * which the fit needs to tell the ASCII weights apart.
 */
export const MIN_CALIBRATION_PROBES = 8;
/** Documents looked at for probes (every k-th is taken, so they spread over the start). */
const PROBE_WINDOW = 256;
/** Largest probe: a few KB give a stable ratio. */
const MAX_PROBE_BYTES = 8192;

export interface CalibrationCost {
  /** Texts measured. */
  readonly probes: number;
  /** Requests sent, retries included (as the summary's `requests` counts them). */
  readonly requests: number;
  readonly tokens: number;
  readonly cost: number;
}

export async function readCalibration(outDir: string): Promise<CalibrationState | undefined> {
  try {
    return JSON.parse(await readFile(join(outDir, CALIBRATION_FILE), 'utf8')) as CalibrationState;
  } catch {
    return undefined; // none yet, or unreadable: calibrate again
  }
}

export async function writeCalibration(outDir: string, sizing: RunSizing): Promise<void> {
  const text = `${JSON.stringify(sizing.calibration.state(), null, 2)}\n`;
  await writeFileAtomic(join(outDir, CALIBRATION_FILE), text, { syncDirectory: false });
}

/**
 * Calibrates a run's sizing: with no calibration yet, the probes up front (then persisted); and a
 * probe of any text the planner meets that no probe measured (sizing.measureWith). Returns what
 * they cost, a record that keeps counting while the run plans.
 */
export async function calibrateRun(
  settings: RunSettings,
  sizing: RunSizing,
  embedder: GatewayEmbedder,
  logger: Logger,
  signal: AbortSignal,
  persist: () => Promise<void>,
): Promise<CalibrationCost> {
  const spent = { probes: 0, requests: 0, tokens: 0, cost: 0 };
  const add = (more: CalibrationCost) => {
    spent.probes += more.probes;
    spent.requests += more.requests;
    spent.tokens += more.tokens;
    spent.cost += more.cost;
  };
  sizing.measureWith(async (text) => {
    const measured = await embedder.measure(text, signal);
    add({ probes: 1, requests: measured.requests, tokens: measured.tokens ?? 0, cost: measured.cost });
    return measured.tokens;
  });
  if (sizing.calibration.isPrior) {
    add(await calibrate(settings, sizing, embedder, logger, signal));
    await persist();
  }
  return spent;
}

/**
 * Probes the gateway with up to CALIBRATION_PROBES texts from the corpus's first documents. Each
 * probe is at most the chunk budget in bytes, so even a gateway counting a token per byte cannot
 * cut it.
 */
export async function calibrate(
  settings: RunSettings,
  sizing: RunSizing,
  embedder: GatewayEmbedder,
  logger: Logger,
  signal: AbortSignal,
): Promise<CalibrationCost> {
  const calibration = sizing.calibration;
  const maxBytes = Math.min(MAX_PROBE_BYTES, calibration.current.budgetTokens);
  const texts = await probeTexts(settings, maxBytes);
  const measured = await Promise.all(texts.map((text) => embedder.measure(text, signal)));
  // In probe order, whatever order the answers came in: the fit is the same on a re-run.
  const observations: TokenObservation[] = [];
  let cost = 0;
  let tokens = 0;
  let requests = 0;
  measured.forEach((answer, i) => {
    cost += answer.cost;
    requests += answer.requests;
    if (answer.tokens === undefined) return;
    tokens += answer.tokens;
    observations.push({ profile: profileOf(texts[i]!), tokens: answer.tokens, single: true });
  });
  calibration.calibrate(observations);
  const { weights } = calibration.current;
  if (texts.length > 0 && calibration.isPrior) {
    logger.warn(
      'the gateway reported no usage for the calibration probes: chunks are sized by the UTF-8 byte bound',
    );
  } else if (texts.length > 0) {
    logger.info(
      {
        probes: texts.length,
        weights: Object.fromEntries(CLASSES.map((c, k) => [c, Number(weights[k]!.toFixed(3))])),
      },
      'calibrated the chunk budget to the gateway token count',
    );
  }
  return { probes: texts.length, requests, tokens, cost };
}

/**
 * Probe texts from the corpus's first documents (see chooseProbes), each cut to `maxBytes`.
 */
async function probeTexts(settings: RunSettings, maxBytes: number): Promise<string[]> {
  // Audio: the texts are transcripts, not known before the run transcribes them (reading the corpus
  // here would read every audio file for nothing); the lazy probes measure the transcripts instead.
  if (
    settings.audioField !== undefined ||
    resolveCorpusFormat({ path: settings.input, format: settings.format }) === 'audio'
  )
    return [];
  const documents: ProbeCandidate[] = [];
  for await (const entry of openCorpus(corpusOptions(settings))) {
    if (entry.kind !== 'document' || entry.document.text.trim() === '') continue;
    const text = prefixWithinBytes(entry.document.text, maxBytes);
    const profile = profileOf(text);
    // Too short to be evidence (a caption, a title): its answer would be thrown away unused, and a
    // corpus of such texts would be probed again by every run, which then never sends nothing.
    if (!isEvidence(profile)) continue;
    documents.push({ text, profile });
    if (documents.length >= PROBE_WINDOW) break;
  }
  return chooseProbes(documents, probeCount(documents)).map((i) => documents[i]!.text);
}

/**
 * How many of `documents` to probe: CALIBRATION_PROBES, or MIN_CALIBRATION_PROBES when that many
 * have room for a document of every class the window holds (prose). Planning waits for the
 * probes, and at the default `--concurrency` (8) the second half is a second wave that holds the
 * run's first batch back by a round trip; a window with more classes than that (a multilingual
 * start) gets them all, as probing fewer left scripts to lazy probes and refits during the run
 * (docs/benchmarks.md, a twenty-third session). The count depends on the window alone, never on
 * `--concurrency`: the same corpus is cut the same way however many requests are in flight.
 */
export function probeCount(documents: readonly ProbeCandidate[]): number {
  const classes = CLASSES.filter((_, k) => documents.some(({ profile }) => profile[k]! > 0)).length;
  return classes <= MIN_CALIBRATION_PROBES ? MIN_CALIBRATION_PROBES : CALIBRATION_PROBES;
}

export interface ProbeCandidate {
  readonly text: string;
  /** profileOf(text). */
  readonly profile: readonly number[];
}

/**
 * Which of `documents` to probe (their indices, in corpus order), at most `count`: for each
 * character class the document richest in it, then documents spread over the window. The classes
 * whose feature some document of the window can measure (MEASURED_SHARE) go first, so a script the
 * window holds is measured up front instead of by a lazy probe that stalls planning at the run's
 * start. The four ASCII classes are one feature but each still gets its richest document: the fit
 * needs texts that mix them differently to tell their weights apart.
 */
export function chooseProbes(documents: readonly ProbeCandidate[], count: number): number[] {
  const classShares = documents.map(({ profile }) => {
    const total = profile.reduce((a, b) => a + b, 0) || 1;
    return profile.map((n) => n / total);
  });
  const measurable = new Set<number>();
  for (const { profile } of documents)
    featureShares(profile).forEach((share, k) => {
      if (share >= MEASURED_SHARE) measurable.add(k);
    });
  const order = CLASSES.map((_, k) => k)
    .filter((k) => classShares.some((shares) => shares[k]! > 0))
    .sort((a, b) => Number(measurable.has(b)) - Number(measurable.has(a)) || a - b);
  const chosen = new Set<number>();
  for (const k of order) {
    if (chosen.size >= count) break;
    let richest = -1;
    classShares.forEach((shares, i) => {
      if (shares[k]! > 0 && !chosen.has(i) && (richest < 0 || shares[k]! > classShares[richest]![k]!))
        richest = i;
    });
    if (richest >= 0) chosen.add(richest);
  }
  const step = Math.max(1, Math.floor(documents.length / count));
  for (let i = 0; i < documents.length && chosen.size < count; i += step) chosen.add(i);
  return [...chosen].sort((a, b) => a - b);
}

/** The chunk budget used and why: for the summary and the manifest. */
export function sizingSummary(sizing: RunSizing, calibration?: CalibrationCost): SizingSummary {
  const { calibration: state } = sizing;
  const current = state.current;
  return {
    budgetTokens: current.budgetTokens,
    tokensPerChar: Object.fromEntries(
      CLASSES.map((name, k) => [name, Number(current.weights[k]!.toFixed(4))]),
    ),
    basis: state.isPrior ? 'byte-bound' : current.reason,
    epochs: state.epochs.length,
    ...(calibration && calibration.requests > 0 ? { calibration } : {}),
  };
}
