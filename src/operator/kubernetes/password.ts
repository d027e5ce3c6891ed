/** Superuser passwords: generated where the Secret is written, never passing through the core. */
import { randomBytes } from 'node:crypto';

/** Letters and digits only, which every PostgreSQL client and connection string accepts unescaped. */
export function generatePassword(length = 32): string {
  const alphabet = 'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789';
  // Rejection sampling keeps every character equally likely.
  const limit = 256 - (256 % alphabet.length);
  let out = '';
  while (out.length < length) {
    for (const b of randomBytes(length * 2)) {
      if (b < limit && out.length < length) out += alphabet[b % alphabet.length];
    }
  }
  return out;
}
