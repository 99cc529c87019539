/** Options every distributed command shares: where the queue lives. */
import type { Command } from 'commander';
import { DEFAULTS } from '../config/defaults.js';
import type { Environment } from '../config/env.js';
import { UsageError } from '../errors.js';

export interface QueueFlags {
  redis?: string;
  queue?: string;
  prefix?: string;
}

export function addQueueOptions(command: Command): Command {
  return command
    .option('--redis <url>', 'Redis URL (default: $REDIS_URL)')
    .option('--queue <name>', `queue name (default: ${DEFAULTS.distributed.queue})`)
    .option('--prefix <prefix>', `Redis key prefix (default: ${DEFAULTS.distributed.prefix})`);
}

/** The queue's address from flags, then the environment, then defaults. */
export function queueAddress(flags: QueueFlags, env: Environment) {
  const redisUrl = flags.redis ?? env.redisUrl;
  if (!redisUrl) throw new UsageError('no Redis: pass --redis redis://HOST:6379 or set REDIS_URL');
  const queue = flags.queue ?? DEFAULTS.distributed.queue;
  if (queue.includes(':')) throw new UsageError(`--queue ${queue}: a queue name may not contain ":"`);
  return { redisUrl, queue, prefix: flags.prefix ?? DEFAULTS.distributed.prefix };
}
