/**
 * AnswerBuffers: answers' bodies read into kept buffers, given back once parsed. Real streams; the
 * client's use of it is exercised by every test that embeds through the emulator.
 */
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { AnswerBuffers } from '../../src/gateway/answer-buffers.js';

/** A stream that sends `pieces` one after another, then ends. */
function streamOf(pieces: readonly Buffer[]): PassThrough {
  const stream = new PassThrough();
  setImmediate(() => {
    for (const piece of pieces) stream.write(piece);
    stream.end();
  });
  return stream;
}

/** `bytes` bytes of a pattern that differs from one body to the next. */
function bodyOf(bytes: number, seed: number): Buffer {
  const body = Buffer.allocUnsafe(bytes);
  for (let i = 0; i < bytes; i++) body[i] = (i * 7 + seed) & 0xff;
  return body;
}

/** `body` cut into pieces of `size` bytes. */
function piecesOf(body: Buffer, size: number): Buffer[] {
  const pieces: Buffer[] = [];
  for (let at = 0; at < body.length; at += size) pieces.push(body.subarray(at, at + size));
  return pieces;
}

describe('AnswerBuffers', () => {
  it.each([
    ['announced', true],
    ['not announced (the buffer grows)', false],
  ])('reads a body of many pieces, its length %s', async (_, announced) => {
    const answers = new AnswerBuffers();
    const body = bodyOf(300_000, 1);
    const read = await answers.read(streamOf(piecesOf(body, 16_384)), announced ? body.length : undefined);
    expect(read.equals(body)).toBe(true);
  });

  it('reads an empty body', async () => {
    const read = await new AnswerBuffers().read(streamOf([]), 0);
    expect(read.length).toBe(0);
  });

  it('reads a body longer than it was announced, and one shorter', async () => {
    const answers = new AnswerBuffers();
    const long = bodyOf(100_000, 2);
    expect((await answers.read(streamOf(piecesOf(long, 7_000)), 10)).equals(long)).toBe(true);
    const short = bodyOf(1_000, 3);
    expect((await answers.read(streamOf([short]), 500_000)).equals(short)).toBe(true);
  });

  it('takes an announced length as a hint: a huge one allocates no more than a kept buffer', async () => {
    const answers = new AnswerBuffers();
    const body = bodyOf(20_000, 15);
    const read = await answers.read(streamOf([body]), 40 * 2 ** 30);
    expect(read.equals(body)).toBe(true);
    expect(read.buffer.byteLength).toBeLessThanOrEqual(8 * 2 ** 20);
  });

  it('never hands out a buffer in use; a body given back serves the next answer', async () => {
    const answers = new AnswerBuffers();
    const first = await answers.read(streamOf([bodyOf(200_000, 4)]), 200_000);
    const second = await answers.read(streamOf([bodyOf(200_000, 5)]), 200_000);
    expect(second.buffer).not.toBe(first.buffer);
    // Both bodies intact: neither was written over.
    expect(first.equals(bodyOf(200_000, 4))).toBe(true);
    expect(second.equals(bodyOf(200_000, 5))).toBe(true);

    answers.giveBack(first);
    const third = await answers.read(streamOf([bodyOf(150_000, 6)]), 150_000);
    expect(third.buffer).toBe(first.buffer);
    expect(third.equals(bodyOf(150_000, 6))).toBe(true);
    expect(second.equals(bodyOf(200_000, 5))).toBe(true);
  });

  it('takes the smallest kept buffer that holds the body', async () => {
    const answers = new AnswerBuffers();
    const large = await answers.read(streamOf([bodyOf(1_000_000, 7)]), 1_000_000);
    const small = await answers.read(streamOf([bodyOf(100_000, 8)]), 100_000);
    answers.giveBack(large);
    answers.giveBack(small);
    const next = await answers.read(streamOf([bodyOf(90_000, 9)]), 90_000);
    expect(next.buffer).toBe(small.buffer);
  });

  it('keeps a few buffers, the largest of those given back', async () => {
    const answers = new AnswerBuffers();
    const sizes = [100_000, 200_000, 300_000, 400_000, 500_000, 600_000];
    const bodies = await Promise.all(
      sizes.map((size, i) => answers.read(streamOf([bodyOf(size, 20 + i)]), size)),
    );
    for (const body of bodies) answers.giveBack(body);
    const again = [];
    for (let i = 0; i < 5; i++) again.push(await answers.read(streamOf([bodyOf(50_000, 30 + i)]), 50_000));
    // The four largest were kept (of 300,000 to 600,000 bytes).
    const reusedOf = again
      .map((body) => bodies.findIndex((b) => b.buffer === body.buffer))
      .filter((index) => index >= 0);
    expect(reusedOf.sort()).toEqual([2, 3, 4, 5]);
    again.forEach((body, i) => {
      expect(body.equals(bodyOf(50_000, 30 + i))).toBe(true);
    });
  });

  it('gives a buffer back once however often it is given', async () => {
    const answers = new AnswerBuffers();
    const body = await answers.read(streamOf([bodyOf(100_000, 10)]), 100_000);
    answers.giveBack(body);
    answers.giveBack(body);
    const one = await answers.read(streamOf([bodyOf(100_000, 11)]), 100_000);
    const two = await answers.read(streamOf([bodyOf(100_000, 12)]), 100_000);
    expect(two.buffer).not.toBe(one.buffer);
    expect(one.equals(bodyOf(100_000, 11))).toBe(true);
  });

  it('rejects as the stream fails, and when it closes before its end', async () => {
    const answers = new AnswerBuffers();
    const failing = new PassThrough();
    setImmediate(() => {
      failing.write(bodyOf(1_000, 13));
      failing.destroy(new Error('socket hang up'));
    });
    await expect(answers.read(failing, 5_000)).rejects.toThrow('socket hang up');

    const cut = new PassThrough();
    setImmediate(() => {
      cut.write(bodyOf(1_000, 14));
      cut.destroy();
    });
    await expect(answers.read(cut, 5_000)).rejects.toThrow('the answer ended before its body did');
  });
});
