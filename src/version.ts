/**
 * The tool's name and version, for manifests and part metadata: read once from the package.json
 * above this file (dist/version.js, or a chunk of the bundle in dist/bundle/).
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function packageJson(): { name: string; version: string } {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir);
  return JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name: string; version: string };
}

const pkg = packageJson();

export const TOOL = { name: pkg.name, version: pkg.version } as const;
