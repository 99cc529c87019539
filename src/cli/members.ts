/** `embedpipe members`: the organization's members (management key). */
import type { Command } from 'commander';
import type { MembersFlags } from './members-action.js';
import { addTableOptions } from './table-options.js';

export function registerMembers(program: Command): void {
  addTableOptions(
    program
      .command('members')
      .description('list the members of the organization ($EMBEDPIPE_MANAGEMENT_KEY)'),
    'members',
  ).action(async (flags: MembersFlags) => {
    // Loaded here, not at the top: the gateway client is heavy and --help needs none of it.
    const { membersAction } = await import('./members-action.js');
    await membersAction(flags);
  });
}
