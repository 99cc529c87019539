/** What `embedpipe members` does; loaded only when the command runs (see members.ts). */
import { UsageError } from '../errors.js';
import type { Member } from '../gateway/index.js';
import { commandContext, type GatewayFlags } from './context.js';
import { printJson, printTable } from './format.js';

export interface MembersFlags extends GatewayFlags {
  offset?: number;
  limit?: number;
  all?: boolean;
}

export async function membersAction(flags: MembersFlags): Promise<void> {
  if (flags.all && flags.offset !== undefined) throw new UsageError('--all and --offset do not go together');
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
}
