/**
 * How large a file is still read (or stat'ed) in one synchronous call on the main thread. Through
 * `fs/promises`, a small file's open, fstat, read and close each make a trip through libuv's
 * thread pool, about ten times the CPU of the calls themselves (docs/benchmarks.md, "a
 * twenty-sixth session"); a larger file is read in the pool, so that no long read holds the event
 * loop. As the spill's and the data files' synchronous writes, for the same reason.
 */
export const SYNC_READ_BYTES = 256 * 1024;
