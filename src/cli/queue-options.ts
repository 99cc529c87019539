/** Where the queue lives, from the options every distributed command shares (options-table.ts). */
import type { Environment } from '../config/env.js';
import type { QueueFlags } from '../config/option-types.js';
import { optionValues } from '../config/option-values.js';
import { UsageError } from '../errors.js';

export type { QueueFlags } from '../config/option-types.js';

/** The queue's address by the table's rule: flags, then the environment, then defaults. */
export function queueAddress(flags: QueueFlags, env: Environment) {
  const options = optionValues(flags, undefined, env);
  const redisUrl = options.get('redis');
  if (!redisUrl) throw new UsageError('no Redis: pass --redis redis://HOST:6379 or set REDIS_URL');
  const queue = options.get('queue');
  if (queue.includes(':')) throw new UsageError(`--queue ${queue}: a queue name may not contain ":"`);
  return { redisUrl, queue, prefix: options.get('prefix') };
}
