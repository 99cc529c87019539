/** `embedpipe search TARGET "text"`: the top-k chunks of a dataset folder or a store for a query. */
import type { Command } from 'commander';
import type { SearchFlags } from './search-action.js';
import { addTableOptions } from './table-options.js';

export function registerSearch(program: Command): void {
  addTableOptions(
    program
      .command('search')
      .description('the chunks nearest to a query (cosine), from a dataset folder or a vector store')
      .argument('<target>', 'a dataset folder (the --out of runs), a postgres:// or a lancedb:// store URL')
      .argument('<text>', "the query, embedded with the dataset's model through the gateway"),
    'search',
  ).action(async (target: string, text: string, flags: SearchFlags) => {
    const { searchAction } = await import('./search-action.js');
    await searchAction(target, text, flags);
  });
}
