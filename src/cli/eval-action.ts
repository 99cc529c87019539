/** What `embedpipe eval` does; loaded only when the command runs (see eval.ts). */
import { resolve } from 'node:path';
import { CostBudget } from '../embedding/cost-budget.js';
import { type Evaluation, evaluate } from '../eval/evaluate.js';
import { METRICS } from '../eval/metrics.js';
import { writeEvaluationReport } from '../eval/report.js';
import { parseVariants } from '../eval/variants.js';
import { printJson, printTable } from './format.js';
import { openQueryGateway } from './query-gateway.js';

export interface EvalFlags {
  /** Comma-separated, as given. */
  versions?: string;
  queries?: string;
  sample?: number;
  seed?: number;
  k?: number;
  report?: string;
  variants?: string;
  maxCost?: number;
  baseUrl?: string;
  allowInsecureHttp?: boolean;
  emulator?: boolean;
  json?: boolean;
}

export async function evalAction(dir: string, flags: EvalFlags): Promise<void> {
  const out = resolve(dir);
  const gateway = await openQueryGateway(flags, 'eval embeds the queries');
  let evaluation: Evaluation;
  try {
    evaluation = await evaluate({
      dir: out,
      versions: (flags.versions ?? '')
        .split(',')
        .map((v) => v.trim())
        .filter((v) => v !== ''),
      queriesFile: flags.queries,
      ...(flags.sample !== undefined ? { sample: flags.sample } : {}),
      ...(flags.seed !== undefined ? { seed: flags.seed } : {}),
      ...(flags.k !== undefined ? { k: flags.k } : {}),
      ...(flags.variants !== undefined ? { variants: parseVariants(flags.variants) } : {}),
      client: gateway.client,
      budget: flags.maxCost !== undefined ? new CostBudget(flags.maxCost) : undefined,
    });
  } finally {
    await gateway.close();
  }
  const report = await writeEvaluationReport(evaluation, flags.report);
  if (flags.json) return printJson({ ...evaluation, report });
  printSummary(evaluation, report);
}

const interval = (i: { mean: number; low: number; high: number }, sign = false) =>
  `${sign && i.mean > 0 ? '+' : ''}${i.mean.toFixed(3)} [${i.low.toFixed(3)}, ${i.high.toFixed(3)}]`;

function printSummary(evaluation: Evaluation, report: string): void {
  process.stdout.write(`${evaluation.how}\n\n`);
  printTable(
    ['VERSION', 'MODEL', 'DIMS', 'BYTES', ...METRICS.map((m) => m.toUpperCase()), 'THRESHOLD'],
    evaluation.versions.map((v) => [
      `${v.name}${v.current && !v.variant ? '*' : ''}`,
      v.model,
      String(v.dims),
      String(v.bytesPerVector),
      ...METRICS.map((m) => interval(v.metrics.metrics[m])),
      v.scores.threshold ? v.scores.threshold.threshold.toFixed(3) : '-',
    ]),
  );
  for (const c of evaluation.comparisons) {
    process.stdout.write(`\n${c.candidate} − ${c.base} (paired, 95%):\n`);
    for (const m of METRICS) {
      const d = c.differences[m];
      const verdict = d.excludesZero ? (d.mean > 0 ? 'better' : 'worse') : 'no clear difference';
      process.stdout.write(`  ${m.padEnd(10)} ${interval(d, true)}  ${verdict}\n`);
    }
    if (c.overlap !== undefined) process.stdout.write(`  overlap@${evaluation.k} ${c.overlap.toFixed(3)}\n`);
  }
  process.stdout.write(`\nreport: ${report}\n`);
}
