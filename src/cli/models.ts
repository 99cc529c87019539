/** `embedpipe models`: the gateway's embedding models. */
import type { Command } from 'commander';
import type { GatewayFlags } from './context.js';

export function registerModels(program: Command): void {
  program
    .command('models')
    .description('list the embedding models of the gateway')
    .option('--base-url <url>', 'gateway base URL, ending in /v1 (default: $EMBEDPIPE_BASE_URL)')
    .option(
      '--allow-insecure-http',
      'allow a plain http:// --base-url to a non-loopback host (key in clear text)',
    )
    .option('--json', 'print JSON for scripts')
    .action(async (flags: GatewayFlags) => {
      // Loaded here, not at the top: the gateway client is heavy and --help needs none of it.
      const { modelsAction } = await import('./models-action.js');
      await modelsAction(flags);
    });
}
