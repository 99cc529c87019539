/**
 * Where the batches of a version's plan started: each batch's first chunk and its size,
 * `[chunk_index, "document id", inputs, tokens]` a line in `_batch-starts.jsonl` beside the version. Batches are packed in corpus
 * order, so a document that gained or lost a chunk moved every later batch, and a nightly packed
 * (and wrote) the rest of the dataset again, its vectors reused. The next version's planner falls
 * back in step with these starts (planner.ts), and its batches after an edit are the ones the
 * version holds again. A version without the file (an older build's) gives no starts: the
 * planner packs as before.
 */
import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Chunk } from '../domain.js';
import { BATCH_STARTS_FILE, JsonlFile } from '../output/jsonl.js';

/** The key of a batch's first chunk, as the planner looks it up. */
export function batchStartKey(chunk: Pick<Chunk, 'documentId' | 'index'>): string {
  return `${chunk.index}\u0000${chunk.documentId}`;
}

/** The plan whose batches the starts are: another model or other planning parameters never meet them. */
export interface StartsPlan {
  readonly model: string;
  /** RunPlan.key. */
  readonly planKey: string;
  /** The request caps the batches were packed under (part of the key; a batch's fill is against them). */
  readonly maxInputs: number;
  readonly maxTokensPerRequest: number;
}

/**
 * Below this mean fill the starts are not followed and the version is packed afresh. Each edit that
 * moved the packing leaves a batch closed early, and a nightly following the starts keeps it: over
 * many nights batches would only get smaller (a dataset that is re-sent whole, by a repair or a
 * forced run, would take more requests). A batch's fill is its inputs or its tokens against the
 * request's cap, whichever is closer; first-fit packing fills nearly every batch.
 */
export const MIN_MEAN_FILL = 0.5;

/** The starts of the batches planned into the version at `dir`, written as they are planned. */
export class BatchStartsFile {
  readonly #file: JsonlFile;

  constructor(dir: string, plan: StartsPlan) {
    this.#file = new JsonlFile(join(dir, BATCH_STARTS_FILE));
    this.#file.add({ model: plan.model, planKey: plan.planKey });
  }

  /** A planned batch: its first chunk, and how many inputs and tokens it holds (its fill). */
  add(batch: {
    readonly chunks: readonly Pick<Chunk, 'documentId' | 'index'>[];
    readonly tokens: number;
  }): void {
    const first = batch.chunks[0]!;
    this.#file.add([first.index, first.documentId, batch.chunks.length, batch.tokens]);
  }

  async close(): Promise<void> {
    await this.#file.close();
  }
}

/**
 * The batch starts of the version at `dir` (batchStartKey each) when it was planned as `plan`;
 * empty when it has none, another plan's, or batches whose mean fill is under MIN_MEAN_FILL (then
 * this version is packed afresh). A line that is not a start (a damaged file) ends the read with
 * what came before it: starts are a hint to the packing, never the dataset's contents.
 */
export async function readBatchStarts(dir: string, plan: StartsPlan): Promise<Set<string>> {
  const starts = new Set<string>();
  let fill = 0;
  try {
    const lines = createInterface({
      input: createReadStream(join(dir, BATCH_STARTS_FILE)),
      crlfDelay: Number.POSITIVE_INFINITY,
    });
    let header = true;
    for await (const line of lines) {
      if (header) {
        header = false;
        if (!samePlan(line, plan)) break;
        continue;
      }
      const start = parseStart(line);
      if (start === undefined) break;
      starts.add(batchStartKey(start));
      fill += Math.max(start.inputs / plan.maxInputs, start.tokens / plan.maxTokensPerRequest);
    }
  } catch {
    // Missing or unreadable: the starts read so far (none when missing).
  }
  return starts.size > 0 && fill / starts.size >= MIN_MEAN_FILL ? starts : new Set();
}

function parseStart(
  line: string,
): { index: number; documentId: string; inputs: number; tokens: number } | undefined {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (!Array.isArray(value) || value.length !== 4) return undefined;
  const [index, documentId, inputs, tokens] = value as unknown[];
  return Number.isInteger(index) &&
    typeof documentId === 'string' &&
    Number.isInteger(inputs) &&
    typeof tokens === 'number' &&
    Number.isFinite(tokens)
    ? { index: index as number, documentId, inputs: inputs as number, tokens }
    : undefined;
}

function samePlan(line: string, plan: StartsPlan): boolean {
  try {
    const header = JSON.parse(line) as { model?: unknown; planKey?: unknown } | null;
    return header?.model === plan.model && header.planKey === plan.planKey;
  } catch {
    return false;
  }
}
