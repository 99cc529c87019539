/**
 * `_batch-starts.jsonl`: a plan's batch starts written as planned and read back for the next
 * version, only by the same plan; a damaged or missing file is no starts, never an error.
 */
import { appendFile, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BATCH_STARTS_FILE } from '../../src/output/jsonl.js';
import { BatchStartsFile, batchStartKey, readBatchStarts } from '../../src/planning/batch-starts.js';
import { tempFolder } from '../helpers/temp.js';

const root = await tempFolder('embedpipe-starts-');
const PLAN = { model: 'emu/embed-small', planKey: '{"budgetTokens":460}' };
const STARTS = [
  { documentId: 'a', index: 0 },
  { documentId: 'quote "q" \\ 👩‍👩‍👧', index: 3 },
  { documentId: '\u2028 line', index: 12 },
];

/** A folder holding STARTS, written as a run writes them. */
async function written(name: string): Promise<string> {
  const dir = join(root, name);
  await mkdir(dir);
  const file = new BatchStartsFile(dir, PLAN);
  for (const start of STARTS) file.add(start);
  await file.close();
  return dir;
}

describe('batch starts', () => {
  it('reads back what was written, for the same plan only', async () => {
    const dir = await written('written');
    expect(await readBatchStarts(dir, PLAN)).toEqual(new Set(STARTS.map(batchStartKey)));
    expect(await readBatchStarts(dir, { ...PLAN, model: 'emu/embed-large' })).toEqual(new Set());
    expect(await readBatchStarts(dir, { ...PLAN, planKey: '{"budgetTokens":128}' })).toEqual(new Set());
  });

  it('reads a damaged file up to its first line that is not a start, and a missing one as none', async () => {
    const dir = await written('damaged');
    await appendFile(join(dir, BATCH_STARTS_FILE), '[1,\n[2,"b"]\n');
    expect(await readBatchStarts(dir, PLAN)).toEqual(new Set(STARTS.map(batchStartKey)));
    await writeFile(join(dir, BATCH_STARTS_FILE), 'not json\n[0,"a"]\n');
    expect(await readBatchStarts(dir, PLAN)).toEqual(new Set());
    expect(await readBatchStarts(join(root, 'none'), PLAN)).toEqual(new Set());
  });
});
