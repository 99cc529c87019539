/**
 * `--switch-if`: a rule a new version's retrieval quality must meet before the dataset switches to
 * it, measured by `eval` against the current version on the same queries. Grammar:
 * `<metric> <op> current [± <number>]` or `<metric> <op> <number>`, with a metric of METRICS and an
 * op of >=, >, <=, <; e.g. `ndcg@10 >= current - 0.01`.
 */
import { ConfigError } from '../errors.js';
import type { Evaluation } from './evaluate.js';
import { METRICS, type MetricName } from './metrics.js';

export interface SwitchRule {
  readonly text: string;
  readonly metric: MetricName;
  readonly op: '>=' | '>' | '<=' | '<';
  /** Relative to the current version's value (`current ± offset`), or an absolute bound. */
  readonly relative: boolean;
  readonly value: number;
}

const RULE =
  /^\s*([a-z@0-9]+)\s*(>=|<=|>|<)\s*(?:(current)\s*(?:([+-])\s*(\d+(?:\.\d+)?|\.\d+))?|(-?\d+(?:\.\d+)?|-?\.\d+))\s*$/;

export function parseSwitchRule(text: string, field = '--switch-if'): SwitchRule {
  const match = RULE.exec(text.toLowerCase());
  if (!match)
    throw new ConfigError(
      field,
      `"${text}" is not a rule: write <metric> <op> current [± <number>] or <metric> <op> <number>, e.g. "ndcg@10 >= current - 0.01"`,
    );
  const [, metric, op, current, sign, offset, absolute] = match;
  if (!(METRICS as readonly string[]).includes(metric!))
    throw new ConfigError(field, `"${metric}" is not a metric: use one of ${METRICS.join(', ')}`);
  const value = current ? (sign === '-' ? -1 : 1) * Number(offset ?? 0) : Number(absolute);
  return {
    text,
    metric: metric as MetricName,
    op: op as SwitchRule['op'],
    relative: current !== undefined,
    value,
  };
}

export interface SwitchVerdict {
  readonly holds: boolean;
  /** One sentence: the rule, the two values, the verdict. */
  readonly reason: string;
  readonly current: number;
  readonly candidate: number;
}

/** Whether `evaluation` (baseline first, the new version second) meets the rule. */
export function judgeSwitch(rule: SwitchRule, evaluation: Evaluation): SwitchVerdict {
  const [base, candidate] = evaluation.versions;
  if (!base || !candidate) throw new Error('a switch rule needs the current and the new version evaluated');
  const now = base.metrics.metrics[rule.metric].mean;
  const next = candidate.metrics.metrics[rule.metric].mean;
  const bound = rule.relative ? now + rule.value : rule.value;
  const holds =
    rule.op === '>='
      ? next >= bound
      : rule.op === '>'
        ? next > bound
        : rule.op === '<='
          ? next <= bound
          : next < bound;
  const reason =
    `${rule.metric} of ${candidate.name} (${candidate.model}) is ${next.toFixed(4)} against ${now.toFixed(4)} for ` +
    `${base.name} (${base.model}) on ${evaluation.queries} queries: "${rule.text}" ${holds ? 'holds' : 'does not hold'}`;
  return { holds, reason, current: now, candidate: next };
}
