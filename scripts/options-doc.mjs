#!/usr/bin/env node
/**
 * Writes the options reference of docs/commands.md (between its `options-reference` markers) from
 * the options table (src/config/options-table.ts, rendered by src/config/options-doc.ts). Reads the
 * BUILT renderer, as scripts/job-schema.mjs does: run it as `npm run build && node
 * scripts/options-doc.mjs`. test/config/options-doc.test.ts fails when the committed page differs
 * from what `spliceOptionsReference` makes of the current source, so the two cannot drift.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const COMMANDS_DOC_PATH = fileURLToPath(new URL('../docs/commands.md', import.meta.url));
export const START = '<!-- options-reference:start -->';
export const END = '<!-- options-reference:end -->';

/** The page with `reference` between its markers, in place of what was there. */
export function spliceOptionsReference(page, reference) {
  const start = page.indexOf(START);
  const end = page.indexOf(END);
  if (start < 0 || end < start) throw new Error(`docs/commands.md lacks the markers ${START} … ${END}`);
  return `${page.slice(0, start + START.length)}\n${reference}${page.slice(end)}`;
}

async function main() {
  const built = new URL('../dist/config/options-doc.js', import.meta.url);
  let module;
  try {
    module = await import(built.href);
  } catch (error) {
    throw new Error(`cannot load ${fileURLToPath(built)}: run \`npm run build\` first (${error.message})`);
  }
  const page = await readFile(COMMANDS_DOC_PATH, 'utf8');
  await writeFile(COMMANDS_DOC_PATH, spliceOptionsReference(page, module.renderOptionsReference()));
  console.log(`wrote the options reference of ${COMMANDS_DOC_PATH}`);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error) => {
    console.error(error.message);
    process.exitCode = 1;
  });
}
