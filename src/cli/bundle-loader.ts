#!/usr/bin/env node
/**
 * The `bin` users run (dist/bundle/main.js): loads the CLI's CommonJS bundle (embedpipe.cjs, beside
 * it) from a V8 code cache made at build time (scripts/bundle.mjs), so a start-up does not parse
 * and compile the code it runs (docs/benchmarks.md, "a twentieth session"). Node 20 has no compile
 * cache for ES modules, hence CommonJS. Only ever run bundled: BUNDLE_ID is set by the bundler.
 *
 * Two caches: a light one (what --help and --version compile) and a full one (what a run
 * compiles); reading the full one cost --help more than it saved. Which one is read is a matter of
 * speed only: a cache that is missing, damaged (its crc), or rejected by V8 (another Node, other V8
 * flags) only means compiling as usual.
 */
// First: the flags a cache was made under (V8 rejects it under others).
import './v8-flags.js';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Script } from 'node:vm';
import { crc32 } from 'node:zlib';

/** The bundle's content hash, in the caches' names: a cache never meets another build's bundle. */
declare const BUNDLE_ID: string;

const here = dirname(fileURLToPath(import.meta.url));
const bundle = join(here, 'embedpipe.cjs');
const args = process.argv.slice(2);
const light = args.length === 0 || args.some((arg) => /^(--help|-h|--version|-V|help)$/.test(arg));
const cacheFile = join(here, `embedpipe-${BUNDLE_ID}.${light ? 'light' : 'full'}.cache`);

/**
 * A cache as written: V8's data, then its crc32 (u32 LE). V8 checks a cache's header (its version,
 * flags, the source's length) but not its payload: a damaged one crashed Node (SIGSEGV), so a cache
 * whose crc does not match is not given to V8.
 */
function readCache(file: string): { data?: Buffer; state: 'missing' | 'damaged' | 'read' } {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch {
    return { state: 'missing' };
  }
  const data = bytes.subarray(0, bytes.length - 4);
  if (bytes.length <= 4 || crc32(data) !== bytes.readUInt32LE(data.length)) return { state: 'damaged' };
  return { data, state: 'read' };
}

function writeCache(file: string, data: Buffer): void {
  const trailer = Buffer.alloc(4);
  trailer.writeUInt32LE(crc32(data));
  writeFileSync(file, Buffer.concat([data, trailer]));
}

/** The bundle as a script, compiled from its cache where V8 takes it (the cache is not kept). */
function compileBundle(): Script {
  const cache = readCache(cacheFile);
  // The bundle is ASCII (the bundler checks): read as latin1, V8 keeps it as a one-byte string.
  const wrapped = `(function (exports, require, module, __filename, __dirname) {${readFileSync(bundle, 'latin1')}\n})`;
  // No dynamic import() in it (the bundler checks): compiled from a cache, a script loses Node's
  // import callback, so packages outside the bundle are loaded by require.
  const script = new Script(wrapped, { filename: bundle, cachedData: cache.data });
  if (process.env['EMBEDPIPE_REPORT_CODE_CACHE'] === '1') {
    const state =
      cache.state === 'read' ? (script.cachedDataRejected ? 'rejected' : 'accepted') : cache.state;
    process.stderr.write(`embedpipe: code cache ${cacheFile}: ${state}\n`);
  }
  return script;
}

const script = compileBundle();
// Build time only: the bundler runs a command with this set to record what it compiled.
const writeCacheTo = process.env['EMBEDPIPE_WRITE_CODE_CACHE'];
if (writeCacheTo) process.once('exit', () => writeCache(writeCacheTo, script.createCachedData()));

const commonJs = { exports: {} };
(script.runInThisContext() as (...args: unknown[]) => void).call(
  commonJs.exports,
  commonJs.exports,
  createRequire(bundle),
  commonJs,
  bundle,
  here,
);
