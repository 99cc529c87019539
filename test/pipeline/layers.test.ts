/**
 * The layers of src/: a lower layer every folder may import (the top-level modules but index.ts,
 * the library's re-exports, and files/),
 * the stage folders beside each other, and the wiring on top (pipeline/, cli/, config/). Stages
 * import each other one way: a pair of stage folders importing each other both ways is listed
 * below, so a new one fails here. Read from the sources with the TypeScript parser (type imports,
 * re-exports and dynamic imports included).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const SRC = join(import.meta.dirname, '../../src');

const LOWER = ['files'];
/** The library's entry point: it re-exports every layer. */
const ENTRY = 'index.ts';
const WIRING = ['pipeline', 'cli', 'config'];

/** Two-way stage pairs that remain, and why (each needs a module moved, not a type). */
const TWO_WAY_ALLOWED: string[] = [];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** The folder of src/ a path is in; '' for a top-level module. */
function folderOf(path: string): string {
  const parts = relative(SRC, path).split('/');
  return parts.length > 1 ? parts[0]! : '';
}

interface Import {
  /** The importing file, relative to src/. */
  readonly from: string;
  /** The imported module, relative to src/. */
  readonly to: string;
}

/** Every relative import of src/: import and export declarations, and `import()` calls. */
function relativeImports(): Import[] {
  return sourceFiles(SRC).flatMap((path) => {
    const file = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
    const specifiers: string[] = [];
    const visit = (node: ts.Node) => {
      if (
        (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
        node.moduleSpecifier &&
        ts.isStringLiteral(node.moduleSpecifier)
      )
        specifiers.push(node.moduleSpecifier.text);
      else if (
        ts.isCallExpression(node) &&
        node.expression.kind === ts.SyntaxKind.ImportKeyword &&
        node.arguments[0] &&
        ts.isStringLiteral(node.arguments[0])
      )
        specifiers.push(node.arguments[0].text);
      ts.forEachChild(node, visit);
    };
    visit(file);
    return specifiers
      .filter((specifier) => specifier.startsWith('.'))
      .map((specifier) => ({
        from: relative(SRC, path),
        to: relative(SRC, resolve(dirname(path), specifier)).replace(/\.js$/, '.ts'),
      }));
  });
}

const imports = relativeImports();
const stages = [...new Set(sourceFiles(SRC).map(folderOf))].filter(
  (folder) => folder !== '' && !LOWER.includes(folder) && !WIRING.includes(folder),
);

/** The files of `folder` that import from `target` (a folder, or a module path). */
function importers(folder: string, target: string): string[] {
  return imports
    .filter(
      ({ from, to }) =>
        folderOf(join(SRC, from)) === folder && (to === target || to.startsWith(`${target}/`)),
    )
    .map(({ from, to }) => `${from} -> ${to}`);
}

describe('the layers of src/', () => {
  it('finds the stage folders and their imports', () => {
    expect(stages).toEqual(
      expect.arrayContaining(['corpus', 'embedding', 'gateway', 'observability', 'output']),
    );
    expect(importers('output', 'observability').length).toBeGreaterThan(0);
  });

  it('the lower layer imports no stage and no wiring', () => {
    const isLower = (path: string) => {
      const folder = folderOf(join(SRC, path));
      return (folder === '' && path !== ENTRY) || LOWER.includes(folder);
    };
    expect(imports.filter(({ from, to }) => isLower(from) && !isLower(to))).toEqual([]);
  });

  it('output/, embedding/ and gateway/ import nothing from corpus/ (file kinds and the BOM are in files/)', () => {
    expect(['output', 'embedding', 'gateway'].flatMap((folder) => importers(folder, 'corpus'))).toEqual([]);
  });

  it('observability/ imports nothing from gateway/ (Pacing and RateView are in domain.ts)', () => {
    expect(importers('observability', 'gateway')).toEqual([]);
  });

  it('stage folders import each other one way, but for the pairs listed', () => {
    const edges = new Set(
      imports
        .map(({ from, to }) => [folderOf(join(SRC, from)), folderOf(join(SRC, to))] as const)
        .filter(([from, to]) => from !== to && stages.includes(from) && stages.includes(to))
        .map(([from, to]) => `${from} -> ${to}`),
    );
    const twoWay = [...edges]
      .map((edge) => edge.split(' -> ') as [string, string])
      .filter(([from, to]) => from < to && edges.has(`${to} -> ${from}`))
      .map(([from, to]) => `${from} <-> ${to}`)
      .sort();
    expect(twoWay).toEqual(TWO_WAY_ALLOWED);
  });
});
