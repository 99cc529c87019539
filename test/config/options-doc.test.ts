/**
 * The options reference of docs/commands.md is generated from the options table: the committed page
 * must hold what scripts/options-doc.mjs writes from the current source (regenerate it when this
 * fails: `npm run build && node scripts/options-doc.mjs`).
 */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DEFAULTS } from '../../src/config/defaults.js';
import { renderOptionsReference } from '../../src/config/options-doc.js';
import { longFlag, optionEntries } from '../../src/config/options-table.js';

interface Script {
  COMMANDS_DOC_PATH: string;
  spliceOptionsReference: (page: string, reference: string) => string;
}
const script = (await import(pathToFileURL(resolve('scripts/options-doc.mjs')).href)) as Script;

describe('the options reference of docs/commands.md', () => {
  it('is what scripts/options-doc.mjs generates from the options table', async () => {
    const page = await readFile(script.COMMANDS_DOC_PATH, 'utf8');
    expect(page).toBe(script.spliceOptionsReference(page, renderOptionsReference()));
  });

  it('has a row for every option, with its default', () => {
    const rows = renderOptionsReference()
      .split('\n')
      .filter((line) => line.startsWith('| `') || line.startsWith('| job file only'));
    expect(rows).toHaveLength(optionEntries().length);
    for (const [key, spec] of optionEntries()) {
      const row = rows.find((line) =>
        spec.flag ? line.startsWith(`| \`${spec.flag}\``) : line.includes(`\`${spec.job}\``),
      );
      expect(row, key).toBeDefined();
      if (spec.flag) expect(row, key).toContain(longFlag(spec));
    }
    expect(rows.find((row) => row.startsWith('| `--concurrency <n>`'))).toContain(
      `| ${DEFAULTS.concurrency} |`,
    );
  });

  it('refuses a page without its markers', () => {
    expect(() => script.spliceOptionsReference('# no markers\n', 'x')).toThrow(/markers/);
  });
});
