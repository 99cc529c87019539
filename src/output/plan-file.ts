/**
 * The plan of a distributed run, written by its producer into the version folder: every batch id in
 * plan order with the corpus counts, and every chunk per document (what finalize checks the version
 * against). The chunks are written first: finalize reads them once the plan file says planning is done.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { UsageError } from '../errors.js';
import { writeFileAtomic } from './atomic.js';
import { ExpectedRows } from './contract.js';
import { messageOf } from './fs-errors.js';

export const PLAN_FILE = '_plan.json';
export const PLAN_CHUNKS_FILE = '_plan-chunks.jsonl';

export interface PlanFile {
  readonly runId: string;
  readonly planned: readonly string[];
  readonly documents: number;
  readonly chunks: number;
  readonly rejects: number;
  readonly tokens: number;
}

export async function writePlanFiles(dir: string, plan: PlanFile, expected: ExpectedRows): Promise<void> {
  await writeFileAtomic(join(dir, PLAN_CHUNKS_FILE), [...expected.lines()].join(''));
  await writeFileAtomic(join(dir, PLAN_FILE), `${JSON.stringify(plan)}\n`);
}

export async function readPlanFile(dir: string, runId: string): Promise<PlanFile> {
  try {
    return JSON.parse(await readFile(join(dir, PLAN_FILE), 'utf8')) as PlanFile;
  } catch {
    throw new UsageError(
      `run ${runId} has no ${PLAN_FILE} in ${dir}: its producer has not finished enqueueing (re-run embedpipe enqueue)`,
    );
  }
}

export async function readPlanChunks(dir: string, runId: string): Promise<ExpectedRows> {
  try {
    return ExpectedRows.fromLines((await readFile(join(dir, PLAN_CHUNKS_FILE), 'utf8')).split('\n'));
  } catch (error) {
    throw new UsageError(
      `run ${runId}: cannot read ${PLAN_CHUNKS_FILE} in ${dir} (${messageOf(error)}): re-run embedpipe enqueue`,
    );
  }
}
