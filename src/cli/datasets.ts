/** `embedpipe datasets DIR`: the versions of a dataset; switch back to one, or remove one. */
import type { Command } from 'commander';
import type { DatasetsFlags } from './datasets-action.js';
import { addTableOptions } from './table-options.js';

export function registerDatasets(program: Command): void {
  addTableOptions(
    program
      .command('datasets')
      .description('list the versions of the dataset in DIR (the --out of runs)')
      .argument('<dir>', 'the dataset folder: the --out of runs'),
    'datasets',
  ).action(async (dir: string, flags: DatasetsFlags) => {
    const { datasetsAction } = await import('./datasets-action.js');
    await datasetsAction(dir, flags);
  });
}
