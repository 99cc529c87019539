/** `embedpipe sync DIR --to URL`: a vector store brought to the dataset's current version. */
import type { Command } from 'commander';
import type { SyncFlags } from './sync-action.js';
import { addTableOptions } from './table-options.js';

export function registerSync(program: Command): void {
  addTableOptions(
    program
      .command('sync')
      .description("bring a vector store (pgvector, LanceDB) to the dataset's current version")
      .argument('<dir>', 'the dataset folder: the --out of runs'),
    'sync',
  ).action(async (dir: string, flags: SyncFlags) => {
    const { syncAction } = await import('./sync-action.js');
    await syncAction(dir, flags);
  });
}
