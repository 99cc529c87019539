/** `embedpipe worker`: embed queued batches until stopped (SIGTERM/SIGINT: finish in-flight jobs, exit 0). */
import type { Command } from 'commander';
import type { WorkerFlags } from '../config/option-types.js';
import { addTableOptions } from './table-options.js';

export function registerWorker(program: Command): void {
  addTableOptions(
    program.command('worker').description('embed the batches `embedpipe enqueue` queued, until stopped'),
    'worker',
  ).action(async (flags: WorkerFlags) => {
    const { workerAction } = await import('./worker-action.js');
    await workerAction(flags);
  });
}
