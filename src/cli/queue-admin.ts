/**
 * The commands that look after distributed runs: `status`, `finalize`, `resume`, `retry-failed`.
 * Each only declares its options here; the actions load when a command runs.
 */
import type { Command } from 'commander';
import type { CommandName } from '../config/options-table.js';
import type { AdminFlags } from './queue-admin-action.js';
import { addTableOptions } from './table-options.js';

export function registerQueueAdmin(program: Command): void {
  // The queue options (--redis, --queue, --prefix) and each command's own come from the options table.
  const admin = (name: CommandName, description: string, argument: string) =>
    addTableOptions(
      program
        .command(name)
        .description(description)
        .argument(argument, 'run id (embedpipe status lists them)'),
      name,
    );

  admin(
    'status',
    'planned, done, failed, in flight, throughput, cost, ETA of a distributed run (all runs without RUN)',
    '[run]',
  ).action(async (runId: string | undefined, flags: AdminFlags) => {
    const { statusAction } = await import('./queue-admin-action.js');
    await statusAction(runId, flags);
  });
  admin(
    'finalize',
    'check that every batch of a run has its part, compact, write the manifest, switch',
    '<run>',
  ).action(async (runId: string, flags: AdminFlags) => {
    const { finalizeAction } = await import('./queue-admin-action.js');
    await finalizeAction(runId, flags);
  });
  admin(
    'resume',
    'continue a run paused by 402 (credits) or 401: the queue takes jobs again',
    '<run>',
  ).action(async (runId: string, flags: AdminFlags) => {
    const { resumeAction } = await import('./queue-admin-action.js');
    await resumeAction(runId, flags);
  });
  admin('retry-failed', "queue a run's permanently failed batches again", '<run>').action(
    async (runId: string, flags: AdminFlags) => {
      const { retryFailedAction } = await import('./queue-admin-action.js');
      await retryFailedAction(runId, flags);
    },
  );
}
