/** `embedpipe datasets DIR`: the versions of a dataset; switch back to one, or remove one. */
import type { Command } from 'commander';
import type { DatasetsFlags } from './datasets-action.js';

export function registerDatasets(program: Command): void {
  program
    .command('datasets')
    .description('list the versions of the dataset in DIR (the --out of runs)')
    .argument('<dir>', 'the dataset folder: the --out of runs')
    .option('--switch <version>', 'make a complete version current again (roll back), e.g. v000002')
    .option('--remove <version>', 'delete a version that is not current')
    .option('--json', 'print JSON for scripts')
    .action(async (dir: string, flags: DatasetsFlags) => {
      const { datasetsAction } = await import('./datasets-action.js');
      await datasetsAction(dir, flags);
    });
}
