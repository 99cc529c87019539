/** `embedpipe enqueue [JOB]`: plan a corpus and enqueue its batches for workers (distributed mode). */
import type { Command } from 'commander';
import type { EnqueueFlags } from './enqueue-action.js';
import { integerOption } from './options.js';
import { addQueueOptions } from './queue-options.js';
import { addRunOptions } from './run.js';

export function registerEnqueue(program: Command): void {
  addQueueOptions(
    addRunOptions(
      program
        .command('enqueue')
        .description('plan a corpus and enqueue its batches on Redis for `embedpipe worker` processes')
        .argument('[job]', 'job file (jobs/*.json); flags override it'),
    ),
  )
    .option(
      '--high-water <n>',
      'wait while more jobs than this wait in the queue (default: 64)',
      integerOption(1),
    )
    .option(
      '--redis-wait <seconds>',
      'ride out a Redis outage this long before stopping with exit 10 (default: 60)',
      integerOption(1),
    )
    .option('--json', 'print the summary as JSON on stdout')
    .action(async (jobPath: string | undefined, flags: EnqueueFlags) => {
      const { enqueueAction } = await import('./enqueue-action.js');
      await enqueueAction(jobPath, flags);
    });
}
