/**
 * The gate `run --switch-if` puts before the switch: the new version and the current one evaluated
 * on the same drawn queries (the default sample and seed), the rule judged, the report written
 * beside the versions. What it found is kept for the run's summary.
 */
import type { CostBudget } from '../embedding/cost-budget.js';
import type { GatewayClient } from '../gateway/index.js';
import { evaluate } from './evaluate.js';
import { writeEvaluationReport } from './report.js';
import { judgeSwitch, type SwitchRule, type SwitchVerdict } from './switch-rule.js';

export interface SwitchGate {
  gate(version: string, current: string): Promise<SwitchVerdict>;
  /** The verdict, once the gate was asked; with the report's path. */
  readonly verdict: (SwitchVerdict & { readonly rule: string; readonly report: string }) | undefined;
}

export function switchGate(
  rule: SwitchRule,
  options: { readonly dir: string; readonly client: GatewayClient; readonly budget?: CostBudget | undefined },
): SwitchGate {
  let verdict: SwitchGate['verdict'];
  return {
    async gate(version, current) {
      const evaluation = await evaluate({
        dir: options.dir,
        versions: [current, version],
        client: options.client,
        budget: options.budget,
      });
      const judged = judgeSwitch(rule, evaluation);
      const report = await writeEvaluationReport(evaluation);
      verdict = { ...judged, rule: rule.text, report };
      return judged;
    },
    get verdict() {
      return verdict;
    },
  };
}
