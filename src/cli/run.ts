/** `embedpipe run [JOB]`: the whole pipeline in one process, no services. */
import type { Command } from 'commander';
import type { FlagsOf } from '../config/option-types.js';
import { addTableOptions } from './table-options.js';

export function registerRun(program: Command): void {
  addTableOptions(
    program
      .command('run')
      .description('embed a corpus into a Parquet dataset, in this process')
      .argument('[job]', 'job file (jobs/*.json); flags override it'),
    'run',
  ).action(async (jobPath: string | undefined, flags: FlagsOf<'run'>) => {
    // Loaded here, not at the top: the pipeline, emulator, Arrow and Parquet take ~0.5 s to load
    // and --help or a typo needs none of them.
    const { runAction } = await import('./run-action.js');
    await runAction(jobPath, flags);
  });
}
