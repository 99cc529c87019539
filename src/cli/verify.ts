/** `embedpipe verify DIR`: a dataset version checked against the contract, for users and cron. */
import type { Command } from 'commander';
import { DEFAULTS } from '../config/defaults.js';
import { integerOption, numberOption } from './options.js';
import type { VerifyFlags } from './verify-action.js';

export function registerVerify(program: Command): void {
  program
    .command('verify')
    .description('check a dataset version against the dataset contract (exit 0: sound, 5: broken)')
    .argument('<dir>', 'the dataset folder: the --out of runs (or a version folder)')
    .option('--version <version>', 'check this version (e.g. v000002) instead of the current one')
    .option('--deep', 'also read every text and vector: recompute each content_hash, check each vector')
    .option(
      '--sample <n>',
      're-embed N random rows through the gateway and compare the vectors',
      integerOption(1, 100_000),
    )
    .option(
      '--min-cosine <x>',
      `with --sample: lowest cosine similarity that counts as the same vector (default: ${DEFAULTS.verify.minCosine})`,
      numberOption(-1, 1),
    )
    .option(
      '--base-url <url>',
      'with --sample: gateway base URL, ending in /v1 (default: $EMBEDPIPE_BASE_URL)',
    )
    .option(
      '--allow-insecure-http',
      'allow a plain http:// --base-url to a non-loopback host (key in clear text)',
    )
    .option('--emulator', 'with --sample: start the local gateway emulator in-process and use it')
    .option('--json', 'print JSON for scripts')
    .action(async (dir: string, flags: VerifyFlags) => {
      const { verifyAction } = await import('./verify-action.js');
      await verifyAction(dir, flags);
    });
}
