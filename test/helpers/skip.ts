/**
 * Tests that need something a machine may lack (root, a LAN address, an unreadable file, Python
 * readers) skip where it is missing, saying why, but never in CI (`CI` set, as .ci/run sets it):
 * there a skip would be a promise nobody checks, so it fails instead, naming what is missing.
 */
import { expect } from 'vitest';

export const inCi = Boolean(process.env['CI']);

/** Skips the running test with `why`, or fails it in CI. */
export function skipOutsideCi(context: { skip: (note?: string) => never | void }, why: string): never {
  if (inCi) expect.fail(`this test must run in CI, but ${why}`);
  context.skip(why);
  throw new Error('unreachable: context.skip returns by throwing');
}

/** For `describe.runIf` / `it.skipIf`: whether to skip (never in CI: the tests then fail on what is missing). */
export function skipUnlessCi(missing: boolean): boolean {
  return missing && !inCi;
}
