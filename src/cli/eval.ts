/** `embedpipe eval DIR`: retrieval quality of a dataset's versions, side by side (a migration measured). */
import type { Command } from 'commander';
import type { EvalFlags } from './eval-action.js';
import { integerOption, numberOption } from './options.js';

export function registerEval(program: Command): void {
  program
    .command('eval')
    .description(
      "retrieval quality of a dataset's versions side by side: recall@1/5/10, MRR, nDCG@10 with bootstrap intervals, each version against the first",
    )
    .argument('<dir>', 'a dataset folder (the --out of runs)')
    .option(
      '--versions <a,b,…>',
      'versions to evaluate, comma-separated; the first is the baseline (default: the current one, then the newest other)',
      (value: string) =>
        value
          .split(',')
          .map((v) => v.trim())
          .filter((v) => v !== ''),
    )
    .option(
      '--queries <file>',
      'JSONL of {"query", "relevant": [id | {"id", "chunk_index"}]} (default: known-item queries drawn from the baseline)',
    )
    .option('--sample <n>', 'known-item queries to draw (default: 200)', integerOption(1, 1_000_000))
    .option('--seed <n>', 'seed of the drawn queries and of the bootstrap (default: 1)', integerOption(0))
    .option('-k, --k <n>', 'results looked at per query (default and minimum: 10)', integerOption(10, 10_000))
    .option(
      '--variants <list>',
      'also measure smaller forms of each version: dims:N (a prefix, re-normalised), float16, int8, binary; e.g. dims:256,int8,binary',
    )
    .option('--report <file>', 'where the HTML report goes (default: <dir>.versions/_eval/<versions>.html)')
    .option(
      '--max-cost <usd>',
      'stop before embedding the queries would spend more than this (USD)',
      numberOption(0, 1e9),
    )
    .option('--base-url <url>', 'gateway base URL, ending in /v1 (default: $EMBEDPIPE_BASE_URL)')
    .option(
      '--allow-insecure-http',
      'allow a plain http:// --base-url to a non-loopback host (key in clear text)',
    )
    .option('--emulator', 'embed the queries with the local gateway emulator (datasets made with --emulator)')
    .option('--json', 'print the evaluation as JSON')
    .action(async (dir: string, flags: EvalFlags) => {
      const { evalAction } = await import('./eval-action.js');
      await evalAction(dir, flags);
    });
}
