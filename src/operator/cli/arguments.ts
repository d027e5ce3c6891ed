/** Parsers of command-line values shared by the commands, so every command rejects bad input alike. */
import { InvalidArgumentError, Option } from 'commander';
import { parseDuration } from '../driver/duration.ts';

/** A duration such as `15s` or `2m`, in milliseconds. */
export const duration = (value: string): number => {
  try {
    return parseDuration(value);
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
};

/** A whole number no smaller than `min`. */
export const wholeNumber =
  (min: number) =>
  (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min) throw new InvalidArgumentError(`must be a whole number of at least ${min}`);
    return n;
  };

/** An option that can also come from an environment variable, as a Deployment would set it. */
export const envOption = (flags: string, description: string, env: string) => new Option(flags, description).env(env);
