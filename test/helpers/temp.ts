/** Temp folders for a test file. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';

/** A fresh temp folder named `<prefix>XXXXXX`, removed after the test file. */
export async function tempFolder(prefix = 'embedpipe-test-'): Promise<string> {
  const folder = await mkdtemp(join(tmpdir(), prefix));
  afterAll(() => rm(folder, { recursive: true, force: true }));
  return folder;
}
