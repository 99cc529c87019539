// The CLI as users run it (`bin`): tsc's output bundled by esbuild into dist/bundle/, one file per
// lazily loaded command (code splitting keeps `--help` from loading the pipeline). Loading ~600
// modules one by one took about a third of a one-document run; a bundle loads a few files.
// Left outside: packages that find files next to their own code (wasm, Lua scripts, native
// binaries) or must be one instance with them (ioredis with bullmq), and what is loaded by
// require at run time (pino-pretty, gpt-tokenizer: see their createRequire calls).
import { rm } from 'node:fs/promises';
import { build } from 'esbuild';

/**
 * undici's HTTP/2 client in place of a stub: it is used only when a connection negotiates h2, which
 * needs `allowH2`, and embedpipe's gateway client never sets it (HTTP/1.1 keep-alive). Bundled,
 * its `require('node:http2')` loaded Node's HTTP/2 module at every start-up (~12 ms of CPU).
 */
const withoutHttp2 = {
  name: 'without-http2',
  setup(build) {
    build.onResolve({ filter: /^\.\/client-h2\.js$/ }, (args) =>
      args.importer.endsWith('/undici/lib/dispatcher/client.js')
        ? { path: 'undici-client-h2-stub', namespace: 'without-http2' }
        : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: 'without-http2' }, () => ({
      contents:
        "module.exports = function connectH2() { throw new Error('HTTP/2 is not built into embedpipe: its gateway client speaks HTTP/1.1 (allowH2 is never set)'); };",
      loader: 'js',
    }));
  },
};

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
  plugins: [withoutHttp2],
  logLevel: 'warning',
  legalComments: 'none',
});
