/**
 * The shape the code keeps: `pipeline/` is wiring only (short, no long functions), and BullMQ is
 * spoken to in one module. Read from the sources with the TypeScript parser.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const SRC = join(import.meta.dirname, '../../src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Every function, method and arrow function of a file longer than `max` lines. */
function longFunctions(path: string, max: number): string[] {
  const text = readFileSync(path, 'utf8');
  const file = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const start = file.getLineAndCharacterOfPosition(node.getStart()).line;
      const end = file.getLineAndCharacterOfPosition(node.getEnd()).line;
      const name = (node as ts.FunctionDeclaration).name?.getText() ?? '(anonymous)';
      if (end - start + 1 > max)
        found.push(`${relative(SRC, path)}:${start + 1} ${name} ${end - start + 1} lines`);
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

/**
 * The packages and source files `from` loads when it is run: static value imports, followed
 * (`import type`, type-only specifiers and dynamic `import()` are not loaded with it).
 */
function loadedBy(from: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (path: string) => {
    if (files.has(path)) return;
    files.add(path);
    const file = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
    for (const statement of file.statements) {
      if (!ts.isImportDeclaration(statement) && !ts.isExportDeclaration(statement)) continue;
      const specifier = statement.moduleSpecifier;
      if (!specifier || !ts.isStringLiteral(specifier)) continue;
      if (ts.isImportDeclaration(statement)) {
        const clause = statement.importClause;
        if (clause?.isTypeOnly) continue;
        const named = clause?.namedBindings;
        if (
          clause &&
          !clause.name &&
          named &&
          ts.isNamedImports(named) &&
          named.elements.every((e) => e.isTypeOnly)
        )
          continue;
      } else if (statement.isTypeOnly) continue;
      const target = specifier.text;
      if (target.startsWith('.')) visit(resolve(dirname(path), target.replace(/\.js$/, '.ts')));
      else
        packages.add(
          target.startsWith('@') ? target.split('/').slice(0, 2).join('/') : target.split('/')[0]!,
        );
    }
  };
  visit(from);
  return { files, packages };
}

describe('the shape of the code', () => {
  const pipeline = sourceFiles(join(SRC, 'pipeline'));

  it('pipeline/ is wiring: under 1,000 lines of code, no function over 80 lines', () => {
    // Code lines: blank lines and comments (the why of the wiring) are not counted.
    const code = (path: string) =>
      readFileSync(path, 'utf8')
        .split('\n')
        .filter((line) => line.trim() !== '' && !/^\s*(\/\/|\/\*|\*)/.test(line)).length;
    const lines = pipeline.reduce((sum, path) => sum + code(path), 0);
    expect(lines).toBeLessThan(1000);
    expect(pipeline.flatMap((path) => longFunctions(path, 80))).toEqual([]);
  });

  it('BullMQ is imported by queue/batch-jobs.ts alone', () => {
    const importers = sourceFiles(SRC)
      .filter((path) => /from 'bullmq'/.test(readFileSync(path, 'utf8')))
      .map((path) => relative(SRC, path));
    expect(importers).toEqual(['queue/batch-jobs.ts']);
  });

  it('zod is imported as a namespace, so the bundle keeps only the parts used', () => {
    // `import { z } from 'zod'` is an object of all of zod, every locale included: the bundle kept
    // 755 KB of it where `import * as z` keeps 194 KB, ~40 ms of every run's CPU to load.
    const wholeZod = sourceFiles(SRC)
      .filter((path) => /import \{[^}]*\bz\b[^}]*\} from 'zod'/.test(readFileSync(path, 'utf8')))
      .map((path) => relative(SRC, path));
    expect(wholeZod).toEqual([]);
    const users = sourceFiles(SRC).filter((path) =>
      /import \* as z from 'zod'/.test(readFileSync(path, 'utf8')),
    );
    expect(users.length).toBeGreaterThan(0);
  });

  it('run (one process, no services) does not load the Redis client or BullMQ, nor parquet-wasm before it needs it', () => {
    // ioredis alone was ~90 ms of a one-document run's start-up when a shared module pulled it in;
    // instantiating parquet-wasm ~46 ms (output/parquet-wasm.ts loads it on first use).
    const { packages, files } = loadedBy(join(SRC, 'cli/run-action.ts'));
    expect(packages.has('apache-arrow')).toBe(true); // the walk reaches the pipeline and the writer
    expect(files.has(join(SRC, 'output/parquet-part-writer.ts'))).toBe(true);
    expect([...packages].filter((name) => ['ioredis', 'bullmq', 'parquet-wasm'].includes(name))).toEqual([]);
  });
});
