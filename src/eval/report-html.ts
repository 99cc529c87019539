/**
 * The HTML report of `embedpipe eval`: one self-contained page (inline CSS and SVG, no scripts, no
 * outside resources) that opens offline and can be attached to a migration ticket. Every piece of
 * text from the input is escaped: dataset names and queries come from users.
 */
import {
  type Interval,
  METRICS,
  type MetricName,
  type PairedDifference,
  type ScoreDistribution,
  type VersionMetrics,
} from './metrics.js';

export interface ReportVersion {
  /** The dataset version, e.g. `v000003`. */
  readonly name: string;
  readonly model: string;
  readonly current?: boolean | undefined;
  readonly metrics: VersionMetrics;
  readonly scores?: ScoreDistribution | undefined;
}

/** B − A for two of the versions, on the same queries. */
export interface ReportComparison {
  readonly base: string;
  readonly candidate: string;
  readonly differences: Record<MetricName, PairedDifference>;
  /** Mean overlap@k of the two versions' results. */
  readonly overlap?: number | undefined;
}

export interface ReportInput {
  readonly dataset: string;
  readonly versions: readonly ReportVersion[];
  readonly comparisons: readonly ReportComparison[];
  /** Results retrieved per query. */
  readonly k: number;
  /** How the queries were drawn, in words (file, sample size, sampling rule). */
  readonly queriesDrawn: string;
  readonly seed: number | string;
  readonly replicates: number;
  readonly confidence: number;
  readonly generatedAt: Date;
}

const LABELS: Record<MetricName, string> = {
  'recall@1': 'Recall@1',
  'recall@5': 'Recall@5',
  'recall@10': 'Recall@10',
  mrr: 'MRR',
  'ndcg@10': 'nDCG@10',
};

/** Distinct in colour and in lightness, so they survive a greyscale print. */
const PALETTE = ['#1f5fa8', '#d9731a', '#2e8b57', '#7b4fc4', '#b8326f', '#4a5568'];
const RELEVANT_COLOUR = '#2e8b57';
const OTHER_COLOUR = '#8a94a6';

const STYLE = `
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1a202c;margin:0;background:#f7f8fa}
main{max-width:980px;margin:0 auto;padding:24px}
h1{font-size:1.5em;margin:0 0 4px}h2{font-size:1.15em;margin:28px 0 8px}
section{background:#fff;border:1px solid #e2e8f0;border-radius:6px;padding:12px 16px;margin:12px 0}
table{border-collapse:collapse;font-variant-numeric:tabular-nums}
th,td{padding:4px 10px;text-align:right;border-bottom:1px solid #edf0f4}
th:first-child,td:first-child{text-align:left}
.ci{color:#5a6474;font-size:.88em}
.better{background:#e3f4e8;color:#1d6b3a}.worse{background:#fbe5e5;color:#a12828}.ns{color:#5a6474}
.meta{color:#4a5568}.meta dt{font-weight:600;float:left;clear:left;width:150px}.meta dd{margin:0 0 4px 160px}
.charts{display:flex;flex-wrap:wrap;gap:16px}
.swatch{display:inline-block;width:10px;height:10px;margin-right:4px;border-radius:2px}
small{color:#5a6474}svg{max-width:100%;height:auto}
`;

export function renderReport(input: ReportInput): string {
  const versionsLine = input.versions.map((v) => `${v.name} (${v.model})`).join(' vs ');
  const title = `Retrieval quality: ${input.dataset}${versionsLine ? ` — ${versionsLine}` : ''}`;
  return [
    '<!DOCTYPE html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width,initial-scale=1">',
    `<title>${esc(title)}</title>`,
    `<style>${STYLE}</style>`,
    '</head>',
    '<body>',
    '<main>',
    `<h1>${esc(title)}</h1>`,
    renderMeta(input),
    renderMetricTable(input),
    renderComparisons(input),
    renderMetricChart(input),
    renderScores(input),
    renderNotes(input),
    '</main>',
    '</body>',
    '</html>',
    '',
  ].join('\n');
}

function renderMeta(input: ReportInput): string {
  const queries = input.versions[0]?.metrics.queries;
  const rows: [string, string][] = [
    ['Dataset', esc(input.dataset)],
    [
      'Versions',
      input.versions
        .map((v) => `${esc(v.name)}${v.current ? ' (current)' : ''}: ${esc(v.model)}`)
        .join('<br>') || 'none',
    ],
    ['Queries', `${queries ?? 0}; ${esc(input.queriesDrawn)}`],
    ['Results per query', `k = ${input.k}`],
    [
      'Intervals',
      `${pct(input.confidence)} percentile bootstrap over queries, B = ${input.replicates}, seed ${esc(String(input.seed))}`,
    ],
    [
      'Generated',
      `<time datetime="${input.generatedAt.toISOString()}">${formatDate(input.generatedAt)}</time>`,
    ],
  ];
  return `<section><dl class="meta">${rows.map(([k, v]) => `<dt>${k}</dt><dd>${v}</dd>`).join('')}</dl></section>`;
}

function renderMetricTable(input: ReportInput): string {
  if (input.versions.length === 0) return '<h2>Metrics</h2><section><p>No versions measured.</p></section>';
  const head = `<tr><th>Metric</th>${input.versions.map((v) => `<th>${versionLabel(input, v.name)}</th>`).join('')}</tr>`;
  const rows = METRICS.map(
    (m) =>
      `<tr><td>${LABELS[m]}</td>${input.versions.map((v) => `<td>${intervalCell(v.metrics.metrics[m], false)}</td>`).join('')}</tr>`,
  );
  return `<h2>Metrics per version</h2><section><table>${head}${rows.join('')}</table><p><small>Mean over queries [${pct(input.confidence)} interval].</small></p></section>`;
}

function renderComparisons(input: ReportInput): string {
  if (input.comparisons.length === 0) return '';
  const tables = input.comparisons.map((c) => {
    const a = input.versions.find((v) => v.name === c.base);
    const b = input.versions.find((v) => v.name === c.candidate);
    const rows = METRICS.map((m) => {
      const d = c.differences[m];
      const verdict = !d.excludesZero ? 'ns' : d.mean > 0 ? 'better' : 'worse';
      const word = verdict === 'ns' ? 'not significant' : verdict;
      return (
        `<tr class="${verdict}"><td>${LABELS[m]}</td>` +
        `<td>${a ? num(a.metrics.metrics[m].mean) : '–'}</td><td>${b ? num(b.metrics.metrics[m].mean) : '–'}</td>` +
        `<td>${intervalCell(d, true)}</td><td>${word}</td></tr>`
      );
    });
    const overlap =
      c.overlap === undefined
        ? ''
        : `<p>overlap@${input.k}: ${num(c.overlap)} (share of the top ${input.k} results both versions return)</p>`;
    return (
      `<h3>${esc(c.candidate)} vs ${esc(c.base)}</h3>` +
      `<table><tr><th>Metric</th><th>${esc(c.base)} (A)</th><th>${esc(c.candidate)} (B)</th><th>B − A</th><th></th></tr>${rows.join('')}</table>${overlap}`
    );
  });
  return (
    `<h2>Paired differences</h2><section>${tables.join('')}` +
    `<p><small>Same queries, resampled together. <span class="better">better</span> / <span class="worse">worse</span>: the ${pct(input.confidence)} interval excludes 0; otherwise not significant.</small></p></section>`
  );
}

function renderMetricChart(input: ReportInput): string {
  if (input.versions.length === 0) return '';
  const width = 720;
  const height = 260;
  const left = 40;
  const top = 12;
  const bottom = 28;
  const plotWidth = width - left - 8;
  const plotHeight = height - top - bottom;
  const y = (value: number) => top + plotHeight * (1 - clamp01(value));
  const group = plotWidth / METRICS.length;
  const barWidth = Math.min(36, (group * 0.8) / input.versions.length);
  const parts: string[] = [];
  for (const tick of [0, 0.25, 0.5, 0.75, 1]) {
    parts.push(
      `<line x1="${left}" x2="${width - 8}" y1="${f(y(tick))}" y2="${f(y(tick))}" stroke="#e2e8f0"/>`,
      `<text x="${left - 6}" y="${f(y(tick) + 4)}" text-anchor="end" font-size="11" fill="#5a6474">${tick}</text>`,
    );
  }
  METRICS.forEach((m, g) => {
    const start = left + g * group + (group - barWidth * input.versions.length) / 2;
    input.versions.forEach((v, i) => {
      const { mean, low, high } = v.metrics.metrics[m];
      const x = start + i * barWidth;
      const centre = x + barWidth / 2;
      const colour = PALETTE[i % PALETTE.length]!;
      parts.push(
        `<rect x="${f(x + 1)}" y="${f(y(mean))}" width="${f(barWidth - 2)}" height="${f(y(0) - y(mean))}" fill="${colour}">` +
          `<title>${esc(v.name)} ${LABELS[m]}: ${num(mean)} [${num(low)}, ${num(high)}]</title></rect>`,
        // The whisker: the bootstrap interval, with caps.
        `<path d="M${f(centre)} ${f(y(low))}V${f(y(high))}M${f(centre - 4)} ${f(y(low))}h8M${f(centre - 4)} ${f(y(high))}h8" stroke="#1a202c" stroke-width="1.5" fill="none"/>`,
      );
    });
    parts.push(
      `<text x="${f(left + g * group + group / 2)}" y="${height - 8}" text-anchor="middle" font-size="12">${LABELS[m]}</text>`,
    );
  });
  const legend = input.versions
    .map(
      (v, i) =>
        `<span><span class="swatch" style="background:${PALETTE[i % PALETTE.length]}"></span>${esc(v.name)} (${esc(v.model)})</span>`,
    )
    .join(' &nbsp; ');
  return (
    `<h2>Metrics with intervals</h2><section><p>${legend}</p>` +
    `<svg viewBox="0 0 ${width} ${height}" width="100%" role="img" aria-label="Metric means per version with ${pct(input.confidence)} intervals">${parts.join('')}</svg></section>`
  );
}

function renderScores(input: ReportInput): string {
  const withScores = input.versions.filter((v) => v.scores);
  if (withScores.length === 0) return '';
  const charts = withScores.map((v) => {
    const scores = v.scores!;
    const t = scores.threshold;
    const thresholdText = t
      ? `suggested threshold ${num(t.threshold)} (keeps ${pct(t.truePositiveRate)} of relevant, ${pct(t.falsePositiveRate)} of other results; J = ${num(t.j)})`
      : 'no threshold: relevant or other results missing';
    const quantiles = (label: string, h: ScoreDistribution['relevant']) =>
      `<tr><td>${label}</td><td>${h.total}</td><td>${num(h.p5)}</td><td>${num(h.p50)}</td><td>${num(h.p95)}</td></tr>`;
    return (
      `<div><h3>${versionLabel(input, v.name)}</h3>${histogramSvg(v.name, scores)}` +
      `<p>${thresholdText}</p>` +
      `<table><tr><th>Scores</th><th>n</th><th>p5</th><th>p50</th><th>p95</th></tr>${quantiles('relevant', scores.relevant)}${quantiles('other', scores.other)}</table></div>`
    );
  });
  return (
    `<h2>Score distributions</h2><section><p><span class="swatch" style="background:${RELEVANT_COLOUR}"></span>relevant ` +
    `<span class="swatch" style="background:${OTHER_COLOUR}"></span>other retrieved results; each as a share of its group, dashed line: suggested threshold ` +
    `(maximises true-positive rate − false-positive rate, Youden's J).</p><div class="charts">${charts.join('')}</div></section>`
  );
}

function histogramSvg(name: string, scores: ScoreDistribution): string {
  const width = 440;
  const height = 180;
  const left = 8;
  const top = 8;
  const bottom = 22;
  const plotWidth = width - 2 * left;
  const plotHeight = height - top - bottom;
  const { edges, relevant, other } = scores;
  const low = edges[0]!;
  const high = edges[edges.length - 1]!;
  const span = high - low || 1;
  const x = (score: number) => left + (plotWidth * (Math.min(high, Math.max(low, score)) - low)) / span;
  const share = (count: number, total: number) => (total === 0 ? 0 : count / total);
  let peak = 0;
  for (let i = 0; i < relevant.counts.length; i++)
    peak = Math.max(peak, share(relevant.counts[i]!, relevant.total), share(other.counts[i]!, other.total));
  const y = (value: number) => top + plotHeight * (1 - (peak === 0 ? 0 : value / peak));
  const parts: string[] = [
    `<line x1="${left}" x2="${width - left}" y1="${f(y(0))}" y2="${f(y(0))}" stroke="#a0aec0"/>`,
  ];
  const bars = (counts: number[], total: number, colour: string, label: string) => {
    counts.forEach((count, i) => {
      if (count === 0) return;
      const x0 = x(edges[i]!);
      const x1 = x(edges[i + 1]!);
      const value = share(count, total);
      parts.push(
        `<rect x="${f(x0)}" y="${f(y(value))}" width="${f(Math.max(0.5, x1 - x0 - 1))}" height="${f(y(0) - y(value))}" fill="${colour}" fill-opacity="0.6">` +
          `<title>${label} ${num(edges[i]!)}–${num(edges[i + 1]!)}: ${count}</title></rect>`,
      );
    });
  };
  bars(other.counts, other.total, OTHER_COLOUR, 'other');
  bars(relevant.counts, relevant.total, RELEVANT_COLOUR, 'relevant');
  if (scores.threshold) {
    const tx = f(x(scores.threshold.threshold));
    parts.push(
      `<line x1="${tx}" x2="${tx}" y1="${top}" y2="${f(y(0))}" stroke="#1a202c" stroke-dasharray="4 3"/>`,
      `<text x="${tx}" y="${height - 6}" text-anchor="middle" font-size="11">${num(scores.threshold.threshold)}</text>`,
    );
  }
  parts.push(
    `<text x="${left}" y="${height - 6}" font-size="11" fill="#5a6474">${num(low)}</text>`,
    `<text x="${width - left}" y="${height - 6}" text-anchor="end" font-size="11" fill="#5a6474">${num(high)}</text>`,
  );
  return `<svg viewBox="0 0 ${width} ${height}" width="${width}" role="img" aria-label="Score histogram of ${esc(name)}">${parts.join('')}</svg>`;
}

function renderNotes(input: ReportInput): string {
  return (
    '<h2>Definitions</h2><section><small>' +
    "Recall@k: share of a query's relevant items among its top k results (with several relevant items, recall@1 stays below 1). " +
    'MRR: 1 / rank of the first relevant result, 0 if none of the retrieved results is relevant. ' +
    'nDCG@10: discounted cumulative gain of the top 10 (gain / log2(rank + 1)) over that of the ideal ranking. ' +
    `All figures are means over the same ${input.versions[0]?.metrics.queries ?? 0} queries.` +
    '</small></section>'
  );
}

function versionLabel(input: ReportInput, name: string): string {
  const version = input.versions.find((v) => v.name === name);
  return version ? `${esc(version.name)} <small>${esc(version.model)}</small>` : esc(name);
}

function intervalCell(interval: Interval, signed: boolean): string {
  const n = signed ? signedNum : num;
  return `${n(interval.mean)} <span class="ci">[${n(interval.low)}, ${n(interval.high)}]</span>`;
}

function esc(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

function num(value: number): string {
  if (!Number.isFinite(value)) return '–';
  const text = value.toFixed(3);
  return text === '-0.000' ? '0.000' : text;
}

function signedNum(value: number): string {
  const text = num(value);
  return value > 0 && text !== '0.000' ? `+${text}` : text;
}

function pct(share: number): string {
  return `${Math.round(share * 1000) / 10}%`;
}

/** SVG coordinates to 0.1 px: enough on screen, and keeps the page small. */
function f(value: number): string {
  return String(Math.round(value * 10) / 10);
}

function clamp01(value: number): number {
  return Math.min(1, Math.max(0, value));
}

function formatDate(date: Date): string {
  return `${date.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}
