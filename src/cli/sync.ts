/** `embedpipe sync DIR --to URL`: a vector store brought to the dataset's current version. */
import type { Command } from 'commander';
import { integerOption } from './options.js';
import type { SyncFlags } from './sync-action.js';

export function registerSync(program: Command): void {
  program
    .command('sync')
    .description("bring a vector store (pgvector, LanceDB) to the dataset's current version")
    .argument('<dir>', 'the dataset folder: the --out of runs')
    .requiredOption(
      '--to <url>',
      'the store: postgres://user@host:5432/db?table=docs[&schema=public] or lancedb:///path/to/db?table=docs',
    )
    .option('--verify', 'compare the store with the dataset and report what differs; write nothing')
    .option('--repair', 'write what --verify finds different, then verify again')
    .option(
      '--replace',
      'empty the table first (a model migration into the same table: dims or model changed)',
    )
    .option('--index <kind>', 'build an approximate index after loading: hnsw (cosine)')
    .option(
      '--halfvec',
      'PostgreSQL: store half-precision vectors (halfvec; needed to index over 2,000 dims)',
    )
    .option(
      '--sample <n>',
      'vectors --verify compares value by value (default: 100)',
      integerOption(0, 10_000_000),
    )
    .option('--json', 'print the report as JSON')
    .action(async (dir: string, flags: SyncFlags) => {
      const { syncAction } = await import('./sync-action.js');
      await syncAction(dir, flags);
    });
}
