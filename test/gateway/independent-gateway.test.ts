/**
 * The independent gateway's Retry-After check, which the e2e tests lean on: a request another
 * connection sends inside a 429's window is a violation; one sent within the in-flight grace is not;
 * and a window whose reader was killed (its connection closed before the instant) counts no
 * violation, since nobody could hear of a wait its reader never shared.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import {
  INDEPENDENT_KEY,
  INDEPENDENT_MODEL,
  type IndependentGateway,
  startIndependentGateway,
} from '../helpers/independent-gateway.js';

let gateway: IndependentGateway | undefined;
const agents: Agent[] = [];
afterEach(async () => {
  await Promise.all(agents.splice(0).map((agent) => agent.close().catch(() => {})));
  await gateway?.close();
  gateway = undefined;
});

/** A client of its own connections (a process of its own, as far as the server can tell). */
function client(): Agent {
  const agent = new Agent({ connections: 1 });
  agents.push(agent);
  return agent;
}

async function embed(agent: Agent): Promise<number> {
  const { statusCode, body } = await request(`${gateway!.baseUrl}/embeddings`, {
    method: 'POST',
    dispatcher: agent,
    headers: { authorization: `Bearer ${INDEPENDENT_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: INDEPENDENT_MODEL, input: ['hello'] }),
  });
  await body.dump();
  return statusCode;
}

describe('the independent gateway counts Retry-After violations', () => {
  it('a request from another connection inside the window, past the grace, is one', async () => {
    gateway = await startIndependentGateway();
    expect(await embed(client())).toBe(429); // its first call is a 429
    await sleep(300);
    await embed(client());
    expect(gateway.violations).toHaveLength(1);
    expect(gateway.violations[0]!.afterIssue).toBeGreaterThanOrEqual(250);
  });

  it('a request within the in-flight grace is not', async () => {
    gateway = await startIndependentGateway();
    expect(await embed(client())).toBe(429);
    await embed(client());
    expect(gateway.violations).toEqual([]);
  });

  it("a window whose reader's connection closed before its instant counts none", async () => {
    gateway = await startIndependentGateway();
    const reader = client();
    expect(await embed(reader)).toBe(429);
    // The reader dies before it could share the wait: its connection closes.
    await reader.destroy();
    await sleep(300);
    await embed(client());
    expect(gateway.violations).toEqual([]);
  });
});
