/**
 * A dataset's versions, and the atomic switch between them.
 *
 *   DIR                 a symlink to the current version: `read_parquet('DIR/*.parquet')` reads it
 *   DIR.versions/
 *     v000001/          a complete version (it holds `_manifest.json`, written last)
 *     v000002/          the next version a run is building (no manifest yet); a re-run resumes it
 *     .lock             the lock of the run writing (see lock.ts)
 *
 * Readers only ever see complete versions: a run builds the next one beside the current one and
 * replaces the link with one rename(2), which is atomic, so a query started before the switch reads
 * the old version whole and one started after reads the new one whole. A crashed, interrupted or
 * failed run leaves the link as it was.
 *
 * A new version of the same model and format starts as hard links to the current version's data
 * files: batches the run plans again are already committed, and finalize filters the rows it no
 * longer wants into new files (data files are never modified in place, so the old version's links
 * stay intact). The link target is relative, so the folder can be moved or mounted elsewhere.
 */

import {
  copyFile,
  link,
  lstat,
  mkdir,
  readdir,
  readlink,
  rename,
  rm,
  rmdir,
  symlink,
} from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { FULL_FORM, formOfPlan, reusableForm, type VectorForm } from '../embedding/vector-form.js';
import { OutputError, outputFolderError, UsageError } from '../errors.js';
import { isNotFound, messageOf } from './fs-errors.js';
import { CALIBRATION_FILE, LEGACY_NAMES } from './jsonl.js';
import { LEGACY_MANIFEST_FILE, type Manifest, type ManifestV1, readManifest } from './manifest.js';

export const VERSIONS_SUFFIX = '.versions';
const VERSION_NAME = /^v(\d{6,})$/;

export interface DatasetVersion {
  /** `v000003`. */
  readonly name: string;
  readonly number: number;
  /** Absolute path of the version's folder. */
  readonly dir: string;
  /** The version the dataset's link points to. */
  readonly current: boolean;
  /** Its manifest; undefined while the version is being built (or its run stopped). */
  readonly manifest?: Manifest | ManifestV1;
}

/** The version a run writes into, and what it started from. */
export interface StagingVersion {
  readonly name: string;
  readonly dir: string;
  /** True when this run created it; false when it resumes an unfinished run's version. */
  readonly created: boolean;
  /** Data files linked from the current version when it was created. */
  readonly linked: number;
}

export class VersionedDataset {
  /** The path users read (`--out`): a symlink to the current version. */
  readonly link: string;
  /** The folder holding every version. */
  readonly root: string;

  constructor(link: string) {
    this.link = link;
    this.root = `${link}${VERSIONS_SUFFIX}`;
  }

  /** The current version's name, or undefined when the dataset has none yet. */
  async current(): Promise<string | undefined> {
    let target: string;
    try {
      target = await readlink(this.link);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'EINVAL') return undefined; // none, or a real folder (legacy)
      throw new OutputError(`cannot read the link ${this.link}: ${messageOf(error)}`, { cause: error });
    }
    const name = basename(target);
    if (dirname(target) !== basename(this.root) || !VERSION_NAME.test(name)) {
      throw new OutputError(
        `${this.link} links to ${target}, not to a version in ${basename(this.root)}/: not an embedpipe dataset`,
      );
    }
    return name;
  }

  /** Every version, oldest first, with its manifest when it is complete. */
  /** The version named `name` (e.g. `v000002`); a UsageError naming the versions there are otherwise. */
  async version(name: string): Promise<DatasetVersion> {
    const versions = await this.list();
    const found = versions.find((v) => v.name === name);
    if (found) return found;
    throw new UsageError(
      `${this.link} has no version ${name} (it has: ${versions.map((v) => v.name).join(', ') || 'none'})`,
    );
  }

  async list(): Promise<DatasetVersion[]> {
    const current = await this.current();
    let names: string[];
    try {
      names = await readdir(this.root);
    } catch (error) {
      if (isNotFound(error)) return [];
      throw new OutputError(`cannot list ${this.root}: ${messageOf(error)}`, { cause: error });
    }
    const versions: DatasetVersion[] = [];
    for (const name of names) {
      const match = VERSION_NAME.exec(name);
      if (!match) continue;
      const dir = join(this.root, name);
      const manifest = await readManifest(dir);
      versions.push({
        name,
        number: Number(match[1]),
        dir,
        current: name === current,
        ...(manifest ? { manifest } : {}),
      });
    }
    return versions.sort((a, b) => a.number - b.number);
  }

  /**
   * Creates the versions folder, and moves a dataset written before versions existed (a real folder
   * at the link's path) into it as its first version. An empty folder there is removed (the link
   * replaces it at the first switch); any other content is refused.
   */
  async prepare(): Promise<void> {
    try {
      await mkdir(this.root, { recursive: true });
    } catch (error) {
      throw new OutputError(`cannot create ${this.root}: ${messageOf(error)}`, { cause: error });
    }
    let kind: 'none' | 'link' | 'folder' | 'other' = 'none';
    try {
      const stats = await lstat(this.link);
      kind = stats.isSymbolicLink() ? 'link' : stats.isDirectory() ? 'folder' : 'other';
    } catch (error) {
      if (!isNotFound(error))
        throw new OutputError(`cannot check ${this.link}: ${messageOf(error)}`, { cause: error });
    }
    if (kind === 'other') {
      throw outputFolderError(this.link, Object.assign(new Error('not a folder'), { code: 'EEXIST' }));
    }
    if (kind !== 'folder') return;
    const names = await readdir(this.link);
    if (names.length === 0) {
      await rmdir(this.link).catch((error: unknown) => {
        throw new OutputError(
          `cannot replace the empty folder ${this.link} with the dataset's link (${messageOf(error)}); ` +
            'is it a mount point? Use a folder inside it as --out',
          { cause: error },
        );
      });
      return;
    }
    // Only a folder holding nothing but an earlier embedpipe's files is moved: anything else there
    // would be deleted with the version one day.
    const foreign = names.filter((name) => !isDatasetFile(name));
    if (foreign.length > 0) {
      throw new OutputError(
        `${this.link} holds files that are not an embedpipe dataset (${foreign.slice(0, 3).join(', ')}` +
          `${foreign.length > 3 ? ', …' : ''}): choose another --out, or move them away`,
      );
    }
    // A dataset of an earlier embedpipe: it becomes a version (complete if it has its manifest).
    const first = join(this.root, versionName(((await this.list()).at(-1)?.number ?? 0) + 1));
    await rename(this.link, first).catch((error: unknown) => {
      throw new OutputError(`cannot move ${this.link} to ${first}: ${messageOf(error)}`, { cause: error });
    });
    if (await readManifest(first)) await this.switchTo(basename(first));
  }

  /**
   * The version this run writes: an unfinished one (resumed), else a new one after the newest.
   * A new version of the same model and format as the current one starts from its data files and
   * calibration (hard links, or copies where links are not allowed).
   */
  async staging(opts: {
    model: string;
    format: 'parquet' | 'arrow';
    form?: VectorForm;
  }): Promise<StagingVersion> {
    const versions = await this.list();
    const unfinished = versions.filter((v) => !v.manifest && !v.current).at(-1);
    if (unfinished) return { name: unfinished.name, dir: unfinished.dir, created: false, linked: 0 };
    const name = versionName((versions.at(-1)?.number ?? 0) + 1);
    const dir = join(this.root, name);
    const base = reuseBase(versions, opts);
    const temp = join(this.root, `.${name}.tmp-${process.pid}`);
    await rm(temp, { recursive: true, force: true });
    await mkdir(temp, { recursive: true });
    let linked = 0;
    if (base?.manifest) {
      for (const file of base.manifest.files) {
        await linkOrCopy(join(base.dir, file), join(temp, file));
        linked += 1;
      }
      await linkOrCopy(join(base.dir, CALIBRATION_FILE), join(temp, CALIBRATION_FILE)).catch((error) => {
        if (!isNotFound(error)) throw error;
      });
    }
    // Renamed into place whole, so a version folder never holds half of its links.
    await rename(temp, dir);
    return { name, dir, created: true, linked };
  }

  /** Points the dataset's link at `name` in one atomic rename. */
  async switchTo(name: string): Promise<void> {
    const temp = join(dirname(this.link), `.${basename(this.link)}.link-${process.pid}`);
    try {
      await rm(temp, { force: true });
      await symlink(join(basename(this.root), name), temp);
      await rename(temp, this.link);
    } catch (error) {
      await rm(temp, { force: true }).catch(() => {});
      throw new OutputError(`cannot switch ${this.link} to version ${name}: ${messageOf(error)}`, {
        cause: error,
      });
    }
  }

  /**
   * Removes old versions after a switch: of the current version's model, all but the newest `keep`
   * complete ones; unfinished versions of any model (their run was given up: a newer run finished).
   * Versions of other models stay (a model migration leaves the old model's dataset readable) until
   * removed by hand. Returns the removed names.
   */
  async prune(keep: number): Promise<string[]> {
    const versions = await this.list();
    const current = versions.find((v) => v.current);
    if (!current?.manifest) return [];
    const sameModel = versions.filter((v) => !v.current && v.manifest?.model === current.manifest?.model);
    const removed = [
      ...sameModel.slice(0, Math.max(0, sameModel.length - keep)),
      ...versions.filter((v) => !v.manifest && v.number < current.number),
    ];
    for (const version of removed) await this.remove(version.name);
    return removed.map((v) => v.name);
  }

  /** Deletes a version that is not the current one. */
  async remove(name: string): Promise<void> {
    if (name === (await this.current())) {
      throw new OutputError(`${name} is the current version of ${this.link}; switch to another first`);
    }
    // Renamed away first, so the version vanishes whole even if the deletion is interrupted.
    const trash = join(this.root, `.trash-${name}-${process.pid}`);
    await rename(join(this.root, name), trash);
    await rm(trash, { recursive: true, force: true });
  }
}

function versionName(n: number): string {
  return `v${String(n).padStart(6, '0')}`;
}

const LEGACY_SIDE_FILES: ReadonlySet<string> = new Set(Object.values(LEGACY_NAMES));

/**
 * Files an embedpipe dataset folder holds: data files, side files (a leading `_`, as `_manifest.json`,
 * or the names earlier versions used), and temp files (a leading `.`).
 */
function isDatasetFile(name: string): boolean {
  return (
    /\.(parquet|arrow)$/.test(name) ||
    name === LEGACY_MANIFEST_FILE ||
    LEGACY_SIDE_FILES.has(name) ||
    name.startsWith('_') ||
    name.startsWith('.')
  );
}

async function linkOrCopy(from: string, to: string): Promise<void> {
  try {
    await link(from, to);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EPERM' && code !== 'EXDEV' && code !== 'ENOTSUP') throw error;
    await copyFile(from, to);
  }
}

/**
 * The version a new one starts from (its files linked in, its vectors reused): the current one;
 * when the link is gone (deleted by hand, or a crash before the first switch), the newest complete
 * one, so its texts are still reused rather than paid again. When the current version is of another
 * model, the newest complete one of this model: a migration held back by --switch-if and run again
 * reuses what it paid for. Of this model, only a version whose vectors give this run's (a 256-dim
 * prefix does not give 1,536 dims).
 */
export function reuseBase(
  versions: readonly DatasetVersion[],
  opts: { model: string; format: 'parquet' | 'arrow'; form?: VectorForm },
): DatasetVersion | undefined {
  const reusable = (v: DatasetVersion) =>
    v.manifest?.model === opts.model &&
    v.manifest.format === opts.format &&
    reusableForm(formOfPlan(v.manifest.plan), opts.form ?? FULL_FORM);
  const current = versions.find((v) => v.current) ?? versions.filter((v) => v.manifest).at(-1);
  return current && reusable(current) ? current : versions.filter(reusable).at(-1);
}
