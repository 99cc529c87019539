/** `embedpipe embed TEXT --model M`: one embedding, by hand. */
import type { Command } from 'commander';
import type { EmbedFlags } from './embed-action.js';

export function registerEmbed(program: Command): void {
  program
    .command('embed')
    .description('embed one text and print its vector')
    .argument('<text>', 'the text to embed')
    .requiredOption('--model <model>', 'embedding model, <provider>/<model_name>')
    .option('--base-url <url>', 'gateway base URL, ending in /v1 (default: $EMBEDPIPE_BASE_URL)')
    .option(
      '--allow-insecure-http',
      'allow a plain http:// --base-url to a non-loopback host (key in clear text)',
    )
    .option('--json', 'print JSON for scripts')
    .action(async (text: string, flags: EmbedFlags) => {
      // Loaded here, not at the top: the gateway client is heavy and --help needs none of it.
      const { embedAction } = await import('./embed-action.js');
      await embedAction(text, flags);
    });
}
