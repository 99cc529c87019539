// The CLI as users run it (`bin`): tsc's output bundled by esbuild into one CommonJS file,
// dist/bundle/embedpipe.cjs, and a small loader, dist/bundle/main.js, that compiles it from V8 code
// caches recorded here by running the built CLI (src/cli/bundle-loader.ts says why). Loading ~600
// modules one by one took about a third of a one-document run; the bundle's commands still
// evaluate their heavy modules only when they run (esbuild keeps dynamic imports lazy).
// Left outside: packages that find files next to their own code (wasm, Lua scripts, native
// binaries) or must be one instance with them (ioredis with bullmq), and what is loaded by
// require at run time (pino-pretty, gpt-tokenizer: see their createRequire calls).
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
const dist = new URL('../dist/', import.meta.url).pathname;
const bundle = join(outdir, 'embedpipe.cjs');
const loader = join(outdir, 'main.js');
await rm(outdir, { recursive: true, force: true });
const bundled = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  logLevel: 'warning',
  legalComments: 'none',
};

await build({
  ...bundled,
  entryPoints: [join(dist, 'cli/main.js')],
  outfile: bundle,
  format: 'cjs',
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
  // The modules' `import.meta.url` (createRequire, the package.json lookup): the bundle's own URL.
  define: { 'import.meta.url': '__embedpipe_bundle_url' },
  banner: { js: "var __embedpipe_bundle_url = require('node:url').pathToFileURL(__filename).href;" },
  // ASCII, so the loader reads it as a one-byte string; no whitespace or comments: a third smaller
  // to read and to keep in memory (names are kept, stack traces still name functions).
  charset: 'ascii',
  minifyWhitespace: true,
  plugins: [withoutHttp2],
});
// The loader wraps the bundle in a function: a hashbang there would be a syntax error.
const source = (await readFile(bundle, 'latin1')).replace(/^#!.*\n/, '');
const nonAscii = source.search(/[\u0080-\uffff]/);
if (nonAscii >= 0) throw new Error(`${bundle} is not ASCII at ${nonAscii}: the loader reads it as latin1`);
// A dynamic import() of a package left outside fails in a script compiled from a code cache
// (Node loses the script's import callback with it): such packages are loaded by createRequire.
const dynamicImport = source.search(/\bimport\(\s*["'`]/);
if (dynamicImport >= 0)
  throw new Error(
    `${bundle} keeps a dynamic import() at ${dynamicImport}: load that package by createRequire`,
  );
await writeFile(bundle, source, 'latin1');
const bundleId = createHash('sha256').update(source).digest('hex').slice(0, 16);

await build({
  ...bundled,
  entryPoints: [join(dist, 'cli/bundle-loader.js')],
  outfile: loader,
  format: 'esm',
  define: { BUNDLE_ID: JSON.stringify(bundleId) },
});

// The code caches: what the built CLI compiles for --help, and for a run (a small mixed corpus
// through the in-process emulator: planning, calibration, sending, decoding, Parquet, the switch).
// A failure here is the CLI's own failing: the build stops with its output.
const scratch = await mkdtemp(join(tmpdir(), 'embedpipe-code-cache-'));
try {
  const corpus = join(scratch, 'corpus.jsonl');
  const texts = [
    'Plain English prose about data pipelines, batches and vectors. ',
    'Mixed scripts: 東京の天気は晴れ。 مرحبا بالعالم 👩‍👩‍👧 café naïve\r\n',
    'function f(x) { return x * 2; } // code, and a long unbroken token: ',
  ];
  const lines = Array.from({ length: 300 }, (_, i) =>
    JSON.stringify({
      id: `doc-${i}`,
      text: texts[i % 3].repeat(1 + (i % 40)) + 'x'.repeat(i % 7 === 0 ? 3000 : 0),
    }),
  );
  await writeFile(corpus, `${lines.join('\n')}\n`);
  const record = (kind, args) => {
    const result = spawnSync(process.execPath, [loader, ...args], {
      // Not the builder's environment: no gateway, key or log settings of theirs in the recording.
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME ?? scratch,
        TMPDIR: process.env.TMPDIR ?? tmpdir(),
        EMBEDPIPE_WRITE_CODE_CACHE: join(outdir, `embedpipe-${bundleId}.${kind}.cache`),
      },
      encoding: 'utf8',
    });
    if (result.status !== 0)
      throw new Error(
        `recording the ${kind} code cache: embedpipe ${args.join(' ')} exited ${result.status}\n${result.stderr}`,
      );
  };
  record('light', ['run', '--help']);
  record('full', [
    'run',
    '--input',
    corpus,
    '--model',
    'emu/embed-small',
    '--emulator',
    '--out',
    join(scratch, 'out'),
    '--json',
  ]);
} finally {
  await rm(scratch, { recursive: true, force: true });
}
