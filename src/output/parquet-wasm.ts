/**
 * parquet-wasm, loaded on first use: instantiating its wasm was the largest single item of a
 * one-document run's start-up (docs/benchmarks.md, "a ninth session"), and a run that writes its
 * parts itself (parquet-part-writer.ts) and reads none back through it never needs it.
 */
import { createRequire } from 'node:module';
import type * as ParquetWasm from 'parquet-wasm';

let loaded: typeof ParquetWasm | undefined;

export function parquetWasm(): typeof ParquetWasm {
  loaded ??= createRequire(import.meta.url)('parquet-wasm') as typeof ParquetWasm;
  return loaded;
}
