/** The tool's name and version, for manifests and part metadata (read once from package.json). */
import { createRequire } from 'node:module';

const pkg = createRequire(import.meta.url)('../package.json') as { name: string; version: string };

export const TOOL = { name: pkg.name, version: pkg.version } as const;
