/** `embedpipe members`: the organization's members (management key). */
import type { Command } from 'commander';
import type { MembersFlags } from './members-action.js';
import { integerOption } from './options.js';

export function registerMembers(program: Command): void {
  program
    .command('members')
    .description('list the members of the organization ($EMBEDPIPE_MANAGEMENT_KEY)')
    .option('--offset <n>', 'members to skip', integerOption(0))
    .option('--limit <n>', 'members per page, 1 to 100', integerOption(1, 100))
    .option('--all', 'every member, page after page')
    .option('--base-url <url>', 'gateway base URL, ending in /v1 (default: $EMBEDPIPE_BASE_URL)')
    .option(
      '--allow-insecure-http',
      'allow a plain http:// --base-url to a non-loopback host (key in clear text)',
    )
    .option('--json', 'print JSON for scripts')
    .action(async (flags: MembersFlags) => {
      // Loaded here, not at the top: the gateway client is heavy and --help needs none of it.
      const { membersAction } = await import('./members-action.js');
      await membersAction(flags);
    });
}
