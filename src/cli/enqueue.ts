/** `embedpipe enqueue [JOB]`: plan a corpus and enqueue its batches for workers (distributed mode). */
import type { Command } from 'commander';
import type { FlagsOf } from '../config/option-types.js';
import { addTableOptions } from './table-options.js';

export function registerEnqueue(program: Command): void {
  addTableOptions(
    program
      .command('enqueue')
      .description('plan a corpus and enqueue its batches on Redis for `embedpipe worker` processes')
      .argument('[job]', 'job file (jobs/*.json); flags override it'),
    'enqueue',
  ).action(async (jobPath: string | undefined, flags: FlagsOf<'enqueue'>) => {
    const { enqueueAction } = await import('./enqueue-action.js');
    await enqueueAction(jobPath, flags);
  });
}
