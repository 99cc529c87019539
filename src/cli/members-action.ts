/** What `embedpipe members` does; loaded only when the command runs (see members.ts). */
import { UsageError } from '../errors.js';
import type { Member } from '../gateway/index.js';
import { commandContext, type GatewayFlags, lookup, requireKey } from './context.js';
import { printJson, printTable } from './format.js';

export interface MembersFlags extends GatewayFlags {
  offset?: number;
  limit?: number;
  all?: boolean;
}

export async function membersAction(flags: MembersFlags): Promise<void> {
  if (flags.all && flags.offset !== undefined) throw new UsageError('--all and --offset do not go together');
  const context = commandContext(flags);
  requireKey(context.env, 'management');
  const client = context.client();
  try {
    const { members, total } = await lookup(client, async (gateway) => {
      if (flags.all) {
        const all: Member[] = [];
        for await (const member of gateway.iterateMembers(flags.limit ? { pageSize: flags.limit } : {})) {
          all.push(member);
        }
        return { members: all, total: all.length };
      }
      const page = await gateway.listMembers({
        ...(flags.offset !== undefined ? { offset: flags.offset } : {}),
        ...(flags.limit !== undefined ? { limit: flags.limit } : {}),
      });
      return { members: page.members, total: page.totalCount };
    });
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
