import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EMULATOR_MANAGEMENT_KEY, type RunningEmulator, startEmulator } from '../../src/emulator/index.js';
import { call, expectEnvelope } from './helpers.js';

let emu: RunningEmulator;
beforeAll(async () => {
  emu = await startEmulator();
});
afterAll(() => emu.close());

const members = (query = '') => call(emu, `/organization/members${query}`, { key: EMULATOR_MANAGEMENT_KEY });

describe('GET /organization/members', () => {
  it('pages through 237 members, 50 at a time by default, with total_count the whole organization', async () => {
    const first = await members();
    expect(first.status).toBe(200);
    expect(first.body.total_count).toBe(237);
    expect(first.body.data).toHaveLength(50);

    const seen = [];
    for (let offset = 0; offset < 237; offset += 100) {
      const page = await members(`?offset=${offset}&limit=100`);
      expect(page.body.total_count).toBe(237);
      seen.push(...page.body.data);
    }
    expect(seen).toHaveLength(237);
    expect(new Set(seen.map((m) => m.id)).size).toBe(237);
    expect(seen.slice(0, 50)).toEqual(first.body.data);
    expect((await members('?offset=237')).body.data).toEqual([]);
  });

  it('gives members the spec fields, some names null and both roles', async () => {
    const { data } = (await members('?limit=100')).body;
    for (const member of data) {
      expect(Object.keys(member).sort()).toEqual(['email', 'first_name', 'id', 'last_name', 'role']);
      expect(member.email).toMatch(/^[a-z0-9.]+@example\.org$/);
    }
    expect(data.some((m: { first_name: unknown }) => m.first_name === null)).toBe(true);
    expect(data.some((m: { last_name: unknown }) => m.last_name === null)).toBe(true);
    expect(new Set(data.map((m: { role: string }) => m.role))).toEqual(new Set(['org:admin', 'org:member']));
  });

  it('is the same list on every run', async () => {
    const other = await startEmulator();
    try {
      const reply = await call(other, '/organization/members?limit=5', { key: EMULATOR_MANAGEMENT_KEY });
      expect(reply.body.data).toEqual((await members('?limit=5')).body.data);
    } finally {
      await other.close();
    }
  });

  it.each(['?offset=-1', '?limit=0', '?limit=101', '?limit=abc', '?offset=1.5'])(
    'answers 400 for %s',
    async (query) => {
      expectEnvelope(await members(query), 400);
    },
  );

  it('accepts a null offset', async () => {
    expect((await members('?offset=null&limit=1')).body.data).toHaveLength(1);
  });

  it('honours the members option', async () => {
    const tiny = await startEmulator({ members: 3 });
    try {
      const reply = await call(tiny, '/organization/members', { key: EMULATOR_MANAGEMENT_KEY });
      expect(reply.body).toMatchObject({ total_count: 3 });
      expect(reply.body.data).toHaveLength(3);
    } finally {
      await tiny.close();
    }
  });
});
