import { describe, expect, it } from 'vitest';
import { contentHash } from '../../src/chunking/index.js';

describe('contentHash', () => {
  it('is hex sha256 of utf8(model) + NUL + utf8(text)', () => {
    // printf 'text-embedding-3-small\0hello world' | sha256sum
    expect(contentHash('text-embedding-3-small', 'hello world')).toBe(
      'b56dbf3cdc2f7cd7d222d2b98bf93c6e9f200857cab604b522b980baed0c06f2',
    );
  });

  it('separates model from text and differs per model', () => {
    expect(contentHash('ab', 'c')).not.toBe(contentHash('a', 'bc'));
    expect(contentHash('model-a', 'same text')).not.toBe(contentHash('model-b', 'same text'));
    expect(contentHash('m', 'café 😀')).toMatch(/^[0-9a-f]{64}$/);
  });
});
