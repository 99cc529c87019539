/** `embedpipe embed TEXT --model M`: one embedding, by hand. */
import type { Command } from 'commander';
import type { EmbedFlags } from './embed-action.js';
import { addTableOptions } from './table-options.js';

export function registerEmbed(program: Command): void {
  addTableOptions(
    program
      .command('embed')
      .description('embed one text and print its vector')
      .argument('<text>', 'the text to embed'),
    'embed',
  ).action(async (text: string, flags: EmbedFlags) => {
    // Loaded here, not at the top: the gateway client is heavy and --help needs none of it.
    const { embedAction } = await import('./embed-action.js');
    await embedAction(text, flags);
  });
}
