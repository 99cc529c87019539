/** `embedpipe eval DIR`: retrieval quality of a dataset's versions, side by side (a migration measured). */
import type { Command } from 'commander';
import type { EvalFlags } from './eval-action.js';
import { addTableOptions } from './table-options.js';

export function registerEval(program: Command): void {
  addTableOptions(
    program
      .command('eval')
      .description(
        "retrieval quality of a dataset's versions side by side: recall@1/5/10, MRR, nDCG@10 with bootstrap intervals, each version against the first",
      )
      .argument('<dir>', 'a dataset folder (the --out of runs)'),
    'eval',
  ).action(async (dir: string, flags: EvalFlags) => {
    const { evalAction } = await import('./eval-action.js');
    await evalAction(dir, flags);
  });
}
