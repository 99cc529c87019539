/** What `embedpipe search` does; loaded only when the command runs (see search.ts). */
import { DEFAULTS } from '../config/defaults.js';
import { keepDims } from '../embedding/vector-form.js';
import { UsageError } from '../errors.js';
import { currentVersion } from '../stores/dataset-rows.js';
import { openStore, storeKindOf } from '../stores/open-store.js';
import { searchDataset } from '../stores/search-dataset.js';
import type { SearchHit } from '../stores/store.js';
import { lookup } from './context.js';
import { printJson } from './format.js';
import { openQueryGateway } from './query-gateway.js';

export interface SearchFlags {
  k?: number;
  baseUrl?: string;
  allowInsecureHttp?: boolean;
  emulator?: boolean;
  exact?: boolean;
  json?: boolean;
}

export async function searchAction(target: string, text: string, flags: SearchFlags): Promise<void> {
  if (text.trim() === '') throw new UsageError('the query text is empty');
  const k = flags.k ?? DEFAULTS.search.k;
  const hits = storeKindOf(target)
    ? await searchStore(target, text, k, flags)
    : await searchFolder(target, text, k, flags);
  if (flags.json) return printJson({ target: target.replace(/\/\/[^@/]*@/, '//…@'), query: text, hits });
  for (const [rank, hit] of hits.entries()) {
    const snippet = hit.text.replace(/\s+/g, ' ').slice(0, 100);
    process.stdout.write(`${rank + 1}. ${hit.score.toFixed(4)}  ${hit.id} #${hit.chunkIndex}  ${snippet}\n`);
  }
}

async function searchFolder(dir: string, text: string, k: number, flags: SearchFlags): Promise<SearchHit[]> {
  const version = await currentVersion(dir);
  const query = await embedQuery(text, version.model, version.dims, flags);
  return searchDataset(version, query, k);
}

async function searchStore(url: string, text: string, k: number, flags: SearchFlags): Promise<SearchHit[]> {
  const store = await openStore(url);
  try {
    const state = await store.describe();
    if (!state.synced)
      throw new UsageError(
        `${store.label} holds no synced dataset: run embedpipe sync DIR --to <this URL> first`,
      );
    const query = await embedQuery(text, state.synced.model, state.synced.dims, flags);
    return await store.search(query, k, { exact: flags.exact === true });
  } finally {
    await store.close().catch(() => {});
  }
}

/**
 * The query's vector, by the dataset's model through the gateway, in the dataset's dims: a dataset
 * of fewer dims than the model gives was written with `--dims`, so the query is cut the same way.
 */
async function embedQuery(
  text: string,
  model: string,
  dims: number,
  flags: SearchFlags,
): Promise<Float32Array> {
  const gateway = await openQueryGateway(flags, 'search embeds the query');
  try {
    const result = await lookup(gateway.client, (g) =>
      g.embeddings({ model, input: text, encoding_format: DEFAULTS.encodingFormat }),
    );
    const vector = result.vectors[0];
    if (!vector) throw new UsageError(`the gateway returned no vector for the query (model ${model})`);
    const kept = keepDims(Float32Array.from(vector), dims);
    if (!kept)
      throw new UsageError(
        `model ${model} gives ${vector.length}-dimensional vectors; the dataset holds ${dims}`,
      );
    // Cosine with a zero vector is undefined: every row would score alike (DuckDB says -1).
    if (kept.every((x) => x === 0))
      throw new UsageError(
        `the query's vector under model ${model} (${dims} dims) is all zeros: nothing is nearer to it than anything else`,
      );
    return kept;
  } finally {
    await gateway.close();
  }
}
