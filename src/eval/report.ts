/** An evaluation's HTML report, written beside the versions (`<out>.versions/_eval/`) unless told where. */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Evaluation } from './evaluate.js';
import { renderReport } from './report-html.js';

/** Writes the report; returns its path. */
export async function writeEvaluationReport(evaluation: Evaluation, file?: string): Promise<string> {
  const path =
    file ??
    join(
      `${evaluation.dataset}.versions`,
      '_eval',
      `${evaluation.versions.map((v) => v.name).join('-')}.html`,
    );
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, renderEvaluation(evaluation));
  return path;
}

export function renderEvaluation(evaluation: Evaluation): string {
  return renderReport({
    dataset: evaluation.dataset,
    versions: evaluation.versions.map((v) => ({
      name: v.name,
      model: v.variant ? `${v.model} (${v.variant}: ${v.bytesPerVector} bytes per vector)` : v.model,
      current: v.current,
      metrics: v.metrics,
      scores: v.scores,
    })),
    comparisons: evaluation.comparisons,
    k: evaluation.k,
    queriesDrawn: evaluation.how,
    seed: evaluation.seed,
    replicates: evaluation.replicates,
    confidence: 0.95,
    generatedAt: new Date(),
  });
}
