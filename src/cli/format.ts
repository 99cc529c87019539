/** Printing for commands: a readable table on a terminal, JSON for scripts (`--json`). */
import { withDecimalCosts } from '../output/manifest.js';

/**
 * JSON for scripts. Money takes one form everywhere, the manifest's: every `cost` number becomes
 * a `costUsd` decimal string (`"0.8137068000"`, never `0.8137068000000001`).
 */
export function printJson(value: unknown, stream: NodeJS.WritableStream = process.stdout): void {
  stream.write(`${JSON.stringify(withDecimalCosts(value), null, 2)}\n`);
}

/** Left-aligned columns; `rows` are arrays of cells already turned into strings. */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n') + '\n';
}

export function printTable(
  header: readonly string[],
  rows: readonly (readonly string[])[],
  stream: NodeJS.WritableStream = process.stdout,
): void {
  stream.write(formatTable(header, rows));
}
