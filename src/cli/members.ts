/** `embedpipe members`: the organization's members (management key). */
import type { Command } from 'commander';
import { UsageError } from '../errors.js';
import type { Member } from '../gateway/index.js';
import { commandContext, type GatewayFlags } from './context.js';
import { printJson, printTable } from './format.js';
import { integerOption } from './options.js';

interface MembersFlags extends GatewayFlags {
  offset?: number;
  limit?: number;
  all?: boolean;
}

export function registerMembers(program: Command): void {
  program
    .command('members')
    .description('list the members of the organization ($EMBEDPIPE_MANAGEMENT_KEY)')
    .option('--offset <n>', 'members to skip', integerOption(0))
    .option('--limit <n>', 'members per page, 1 to 100', integerOption(1, 100))
    .option('--all', 'every member, page after page')
    .option('--base-url <url>', 'gateway base URL, ending in /v1 (default: $EMBEDPIPE_BASE_URL)')
    .option('--json', 'print JSON for scripts')
    .action(async (flags: MembersFlags) => {
      if (flags.all && flags.offset !== undefined)
        throw new UsageError('--all and --offset do not go together');
      const client = commandContext(flags).client();
      try {
        let members: Member[];
        let total: number;
        if (flags.all) {
          members = [];
          for await (const member of client.iterateMembers(flags.limit ? { pageSize: flags.limit } : {})) {
            members.push(member);
          }
          total = members.length;
        } else {
          const page = await client.listMembers({
            ...(flags.offset !== undefined ? { offset: flags.offset } : {}),
            ...(flags.limit !== undefined ? { limit: flags.limit } : {}),
          });
          members = page.members;
          total = page.totalCount;
        }
        if (flags.json) {
          printJson({ data: members, total_count: total });
          return;
        }
        printTable(
          ['ID', 'NAME', 'EMAIL', 'ROLE'],
          members.map((m) => [
            m.id,
            [m.first_name, m.last_name].filter(Boolean).join(' ') || '-',
            m.email,
            m.role,
          ]),
        );
        process.stdout.write(`${members.length} of ${total} members\n`);
      } finally {
        await client.close();
      }
    });
}
