import { createHash } from 'node:crypto';
import {
  MEMBERS_LIMIT_DEFAULT,
  MEMBERS_LIMIT_MAX,
  MEMBERS_LIMIT_MIN,
  type MembersResponseWire,
  type MemberWire,
} from '../gateway/wire.js';
import { HttpError } from './http.js';

export const DEFAULT_MEMBER_COUNT = 237;

// biome-ignore format: name lists read best as blocks
const FIRST_NAMES = [
  'Ada', 'Grace', 'Alan', 'Edsger', 'Barbara', 'Donald', 'Frances', 'Ken', 'Margaret', 'Dennis',
  'Radia', 'Tim', 'Hedy', 'Linus', 'Katherine', 'John', 'Sophie', 'Niklaus', 'Annie', 'Guido',
];
// biome-ignore format: name lists read best as blocks
const LAST_NAMES = [
  'Lovelace', 'Hopper', 'Turing', 'Dijkstra', 'Liskov', 'Knuth', 'Allen', 'Thompson', 'Hamilton', 'Ritchie',
  'Perlman', 'Berners-Lee', 'Lamarr', 'Torvalds', 'Johnson', 'McCarthy', 'Wilson', 'Wirth', 'Easley', 'van Rossum',
];

/**
 * The organization's members, the same for every run: ids from a hash of the position, some first
 * or last names null (the spec allows it, clients must cope), every eleventh member an admin.
 */
export function generateMembers(count: number): MemberWire[] {
  return Array.from({ length: count }, (_, i) => {
    const first = i % 9 === 4 ? null : FIRST_NAMES[i % FIRST_NAMES.length]!;
    const last = i % 13 === 7 ? null : LAST_NAMES[(i * 7) % LAST_NAMES.length]!;
    const local = [first, last, String(i + 1)]
      .filter((part) => part !== null)
      .join('.')
      .toLowerCase()
      .replace(/[^a-z0-9.]/g, '');
    return {
      id: `user_${createHash('sha256').update(`member:${i}`).digest('hex').slice(0, 24)}`,
      first_name: first,
      last_name: last,
      email: `${local}@example.org`,
      role: i % 11 === 0 ? 'org:admin' : 'org:member',
    };
  });
}

/** offset ≥ 0 and limit in 1..100 (default 50), from the query; 400 otherwise. */
export function parsePage(query: URLSearchParams): { offset: number; limit: number } {
  const offset = integerParam(query, 'offset', 0, true);
  const limit = integerParam(query, 'limit', MEMBERS_LIMIT_DEFAULT, false);
  if (offset < 0) throw new HttpError(400, 'offset must be at least 0');
  if (limit < MEMBERS_LIMIT_MIN || limit > MEMBERS_LIMIT_MAX) {
    throw new HttpError(400, `limit must be from ${MEMBERS_LIMIT_MIN} to ${MEMBERS_LIMIT_MAX}`);
  }
  return { offset, limit };
}

/** An absent or empty parameter takes the default; so does `null` for a nullable one (offset). */
function integerParam(query: URLSearchParams, name: string, fallback: number, nullable: boolean): number {
  const raw = query.get(name);
  if (raw === null || raw === '' || (nullable && raw === 'null')) return fallback;
  if (!/^-?\d+$/.test(raw)) throw new HttpError(400, `${name} must be an integer`);
  return Number(raw);
}

export function membersPage(members: readonly MemberWire[], query: URLSearchParams): MembersResponseWire {
  const { offset, limit } = parsePage(query);
  return { data: members.slice(offset, offset + limit), total_count: members.length };
}
