/** Argument parsers shared by commands: each names the flag when a value is bad. */
import { InvalidArgumentError } from 'commander';

export function integerOption(min: number, max = Number.MAX_SAFE_INTEGER) {
  return (value: string): number => {
    const n = Number(value);
    if (!/^-?\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < min || n > max) {
      throw new InvalidArgumentError(
        `must be an integer from ${min} to ${max === Number.MAX_SAFE_INTEGER ? '∞' : max}.`,
      );
    }
    return n;
  };
}

export function numberOption(min: number, max: number) {
  return (value: string): number => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isFinite(n) || n < min || n > max) {
      throw new InvalidArgumentError(`must be a number from ${min} to ${max}.`);
    }
    return n;
  };
}
