/**
 * One small JSON record per committed batch (`<out>/.embedpipe/batches/<batchId>.json`): its rows,
 * tokens, cost and per-chunk failures. It is written before the part file, and a batch counts as
 * done only once its part file exists, so a resumed run can total what earlier runs did (and list
 * their failures) without re-reading any vectors.
 */
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ChunkFailure } from '../domain.js';
import { writeFileAtomic } from '../output/index.js';

export interface BatchRecord {
  readonly batchId: string;
  readonly rows: number;
  readonly chunks: number;
  readonly promptTokens: number;
  readonly cost: number;
  readonly requests: number;
  readonly retries: number;
  readonly provider?: string;
  readonly failures: readonly ChunkFailure[];
}

export class BatchLedger {
  readonly #dir: string;

  constructor(outDir: string) {
    this.#dir = join(outDir, '.embedpipe', 'batches');
  }

  async open(): Promise<void> {
    await mkdir(this.#dir, { recursive: true });
  }

  async record(entry: BatchRecord): Promise<void> {
    await writeFileAtomic(join(this.#dir, `${entry.batchId}.json`), JSON.stringify(entry));
  }

  async read(batchId: string): Promise<BatchRecord | undefined> {
    try {
      return JSON.parse(await readFile(join(this.#dir, `${batchId}.json`), 'utf8')) as BatchRecord;
    } catch {
      return undefined;
    }
  }
}
