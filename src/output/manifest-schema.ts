/**
 * The zod schemas of `_manifest.json` (version 2) and of a previous version's `manifest.json`:
 * what writeManifest checks and readManifest accepts (see manifest.ts, which loads this on first use).
 */
import * as z from 'zod';
import { DIGEST_HEX } from './contract.js';
import type { Manifest, ManifestV1 } from './manifest-types.js';

export interface ManifestSchemas {
  readonly manifest: z.ZodType<Manifest>;
  readonly manifestV1: z.ZodType<ManifestV1>;
}

/** The schemas; money is a decimal string with exactly `usdDecimals` decimals. */
export function manifestSchemas(usdDecimals: number): ManifestSchemas {
  const usdString = z
    .string()
    .regex(new RegExp(`^\\d+\\.\\d{${usdDecimals}}$`), 'a decimal string of dollars');

  const count = z.number().nonnegative();

  const common = {
    tool: z.object({ name: z.string(), version: z.string() }),
    createdAt: z.string(),
    model: z.string(),
    dims: z.number().int().nonnegative(),
    format: z.enum(['parquet', 'arrow']),
    providers: z.array(z.string()),
    plan: z.record(z.string(), z.unknown()),
    files: z.array(z.string()),
  };
  const counts = {
    documents: count,
    chunks: count,
    rows: count,
    rejects: count,
    failures: count,
    tokens: count,
    requests: count,
    retries: count,
  };

  const manifest = z.object({
    version: z.literal(2),
    ...common,
    input: z.object({
      path: z.string(),
      kind: z.enum(['file', 'folder']),
      bytes: count,
      files: count,
      sha256: z.string().regex(/^[0-9a-f]{64}$/),
    }),
    gateway: z.object({ baseUrl: z.string(), emulator: z.boolean() }),
    counts: z.object({ ...counts, costUsd: usdString }),
    dataset: z
      .object({
        version: z.string(),
        replaces: z.string().optional(),
        documents: z.object({ added: count, changed: count, unchanged: count, deleted: count }).optional(),
        chunks: z.object({ sent: count, reused: count, deduplicated: count }),
      })
      .optional(),
    contract: z
      .object({
        documents: count,
        documentsSha256: z.string().regex(/^[0-9a-f]{64}$/),
        fileDigests: z
          .record(z.string(), z.object({ rows: count, digest: z.string().regex(DIGEST_HEX), bytes: count }))
          .optional(),
      })
      .optional(),
    transcription: z
      .object({
        model: z.string(),
        language: z.string().optional(),
        temperature: z.number().optional(),
        documents: count,
        seconds: count,
        costUsd: usdString,
      })
      .optional(),
  }) satisfies z.ZodType<Manifest>;

  const manifestV1 = z.object({
    version: z.literal(1),
    ...common,
    counts: z.object({ ...counts, cost: count }),
  }) satisfies z.ZodType<ManifestV1>;
  return { manifest, manifestV1 };
}
