/** `embedpipe search TARGET "text"`: the top-k chunks of a dataset folder or a store for a query. */
import type { Command } from 'commander';
import { integerOption } from './options.js';
import type { SearchFlags } from './search-action.js';

export function registerSearch(program: Command): void {
  program
    .command('search')
    .description('the chunks nearest to a query (cosine), from a dataset folder or a vector store')
    .argument('<target>', 'a dataset folder (the --out of runs), a postgres:// or a lancedb:// store URL')
    .argument('<text>', "the query, embedded with the dataset's model through the gateway")
    .option('-k, --k <n>', 'how many chunks (default: 10)', integerOption(1, 10_000))
    .option('--base-url <url>', 'gateway base URL, ending in /v1 (default: $EMBEDPIPE_BASE_URL)')
    .option(
      '--allow-insecure-http',
      'allow a plain http:// --base-url to a non-loopback host (key in clear text)',
    )
    .option('--emulator', 'embed the query with the local gateway emulator (datasets made with --emulator)')
    .option(
      '--exact',
      "a store: scan every row instead of using its approximate index (the dataset folder's search is always exact)",
    )
    .option('--json', 'print the hits as JSON')
    .action(async (target: string, text: string, flags: SearchFlags) => {
      const { searchAction } = await import('./search-action.js');
      await searchAction(target, text, flags);
    });
}
