// The CLI as users run it (`bin`): tsc's output bundled by esbuild into dist/bundle/, one file per
// lazily loaded command (code splitting keeps `--help` from loading the pipeline). Loading ~600
// modules one by one took about a third of a one-document run; a bundle loads a few files.
// Left outside: packages that find files next to their own code (wasm, Lua scripts, native
// binaries) or must be one instance with them (ioredis with bullmq), and what is loaded by
// require at run time (pino-pretty, gpt-tokenizer: see their createRequire calls).
import { rm } from 'node:fs/promises';
import { build } from 'esbuild';

const outdir = new URL('../dist/bundle/', import.meta.url).pathname;
await rm(outdir, { recursive: true, force: true });
await build({
  entryPoints: [new URL('../dist/cli/main.js', import.meta.url).pathname],
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  external: [
    'parquet-wasm',
    'bullmq',
    'ioredis',
    '@lancedb/lancedb',
    'pg',
    '@electric-sql/*',
    '@duckdb/*',
    'pino-pretty',
    'gpt-tokenizer',
  ],
  // Bundled CommonJS packages call require(): give them one that resolves from here.
  banner: {
    js: "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);",
  },
  logLevel: 'warning',
  legalComments: 'none',
});
