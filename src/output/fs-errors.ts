/** Small helpers for turning Node fs errors into OutputError messages. */

export function isNotFound(error: unknown): boolean {
  return (error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT';
}

/** Node's fs messages already carry the code and the syscall (`ENOSPC: no space left on device, write`). */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
