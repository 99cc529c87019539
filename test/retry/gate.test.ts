import { describe, expect, it } from 'vitest';
import { RetryAfterGate } from '../../src/gateway/retry-after-gate.js';
import { FakeTime } from './fake-time.js';

describe('RetryAfterGate', () => {
  it('is open at first and resolves without sleeping', async () => {
    const time = new FakeTime();
    const gate = new RetryAfterGate(time);
    expect(gate.isOpen).toBe(true);
    await gate.waitUntilOpen();
    expect(time.sleeps).toEqual([]);
  });

  it('extends the closed time and never shortens it', () => {
    const time = new FakeTime();
    const gate = new RetryAfterGate(time);
    gate.closeFor(5000);
    expect(gate.openAt).toBe(time.current + 5000);
    gate.closeFor(1000);
    expect(gate.openAt).toBe(time.current + 5000);
    time.current += 2000;
    gate.closeFor(4000);
    expect(gate.openAt).toBe(time.current + 4000);
    expect(gate.isOpen).toBe(false);
  });

  it('sleeps until the instant, and again if the gate was extended meanwhile', async () => {
    const time = new FakeTime();
    const gate = new RetryAfterGate(time);
    const start = time.current;
    gate.closeFor(1000);
    const waiting = gate.waitUntilOpen();
    // While the waiter sleeps, another request gets a longer Retry-After.
    gate.closeFor(3000);
    await time.settle(waiting);
    expect(time.current).toBe(start + 3000);
    expect(time.sleeps).toEqual([1000, 2000]);
  });

  it('rejects with the signal reason when aborted while closed', async () => {
    const time = new FakeTime();
    const gate = new RetryAfterGate(time);
    gate.closeFor(10_000);
    const controller = new AbortController();
    const waiting = gate.waitUntilOpen(controller.signal);
    const reason = new Error('stop');
    controller.abort(reason);
    await expect(waiting).rejects.toBe(reason);
    await expect(gate.waitUntilOpen(controller.signal)).rejects.toBe(reason);
  });
});
