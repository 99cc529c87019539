/**
 * sha256 of files in a worker thread. The manifest's input digest reads the whole corpus once
 * more; on the main thread, after the last batch, it was the last ~17 s of a 4 GB run (this machine
 * hashes 190–370 MB/s). Started with the run, it overlaps the embedding on any core left free.
 *
 * The worker's source is a string (`eval`): no file to find beside a bundle or a test's sources.
 */
import { Worker } from 'node:worker_threads';

const SOURCE = `
const { parentPort } = require('node:worker_threads');
const { createHash } = require('node:crypto');
const { createReadStream } = require('node:fs');
parentPort.on('message', ({ id, path }) => {
  const hash = createHash('sha256');
  let bytes = 0;
  createReadStream(path)
    .on('data', (chunk) => { bytes += chunk.length; hash.update(chunk); })
    .on('error', (error) => parentPort.postMessage({ id, error: { message: error.message, code: error.code } }))
    .on('end', () => parentPort.postMessage({ id, sha256: hash.digest('hex'), bytes }));
});
`;

interface Answer {
  readonly id: number;
  readonly sha256?: string;
  readonly bytes?: number;
  readonly error?: { readonly message: string; readonly code?: string };
}

export interface FileDigest {
  readonly sha256: string;
  readonly bytes: number;
}

export class FileHasher {
  readonly #worker = new Worker(SOURCE, { eval: true });
  readonly #pending = new Map<number, { resolve: (d: FileDigest) => void; reject: (e: Error) => void }>();
  #next = 0;

  constructor() {
    // Never what keeps a process alive: a run that stops early exits with its hash unfinished.
    this.#worker.unref();
    this.#worker.on('message', (answer: Answer) => {
      const waiting = this.#pending.get(answer.id);
      this.#pending.delete(answer.id);
      if (answer.error) {
        // The file system's code travels along: a folder's digest skips unreadable files by it.
        const error = Object.assign(new Error(answer.error.message), { code: answer.error.code });
        waiting?.reject(error);
      } else waiting?.resolve({ sha256: answer.sha256!, bytes: answer.bytes! });
    });
    this.#worker.on('error', (error) => this.#failAll(error));
    this.#worker.on('exit', () => this.#failAll(new Error('the hashing thread ended')));
  }

  /** The sha256 (hex) and size of the file at `path`; rejects with the file system's error. */
  hash(path: string): Promise<FileDigest> {
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#worker.postMessage({ id, path });
    });
  }

  /** Ends the thread (pending hashes reject). */
  async close(): Promise<void> {
    await this.#worker.terminate();
  }

  #failAll(error: Error): void {
    for (const { reject } of this.#pending.values()) reject(error);
    this.#pending.clear();
  }
}
