/** `embedpipe verify DIR`: a dataset version checked against the contract, for users and cron. */
import type { Command } from 'commander';
import { addTableOptions } from './table-options.js';
import type { VerifyFlags } from './verify-action.js';

export function registerVerify(program: Command): void {
  addTableOptions(
    program
      .command('verify')
      .description('check a dataset version against the dataset contract (exit 0: sound, 5: broken)')
      .argument('<dir>', 'the dataset folder: the --out of runs (or a version folder)'),
    'verify',
  ).action(async (dir: string, flags: VerifyFlags) => {
    const { verifyAction } = await import('./verify-action.js');
    await verifyAction(dir, flags);
  });
}
