/** `embedpipe worker`: embed queued batches until stopped (SIGTERM/SIGINT: finish in-flight jobs, exit 0). */
import type { Command } from 'commander';
import { integerOption } from './options.js';
import { addQueueOptions } from './queue-options.js';
import type { WorkerFlags } from './worker-action.js';

export function registerWorker(program: Command): void {
  addQueueOptions(
    program.command('worker').description('embed the batches `embedpipe enqueue` queued, until stopped'),
  )
    .option('--concurrency <n>', 'batches in flight in this process (default: 8)', integerOption(1, 1024))
    .option('--base-url <url>', 'gateway base URL, ending in /v1 (default: $EMBEDPIPE_BASE_URL)')
    .option(
      '--metrics-port <port>',
      'serve Prometheus metrics on this port at /metrics',
      integerOption(0, 65535),
    )
    .option(
      '--max-retry-after <seconds>',
      'longest Retry-After waited for inside a job; a longer one leaves the batch to a later attempt (default: 300)',
      integerOption(0, 86_400),
    )
    .option(
      '--lock-duration <seconds>',
      'how long a job stays locked to a worker that stopped answering (killed): its jobs go back to the queue after about two to three times this (default: 60)',
      integerOption(1, 3600),
    )
    .option(
      '--allow-insecure-http',
      'allow a plain http:// --base-url to a non-loopback host (key in clear text)',
    )
    .action(async (flags: WorkerFlags) => {
      const { workerAction } = await import('./worker-action.js');
      await workerAction(flags);
    });
}
