/**
 * The operator's JSON log (pino). Every line about a cluster uses the same keys — namespace, name, state,
 * transition ("From→To"), reason — so log queries and alerts can rely on them. Secret values must never
 * reach a log line: the core only ever sees key names, and as a second line of defence any field called
 * data, stringData or password is censored wherever it appears in the first levels of a logged object.
 */
import { type DestinationStream, type Logger, type LoggerOptions, pino } from 'pino';
import type { ClusterKey } from '../core/ports.ts';

export type { Logger };

const SECRET_FIELDS = ['data', 'stringData', 'password'];
const PREFIXES = ['', '*.', '*.*.', '*.*.*.'];

/** The redaction paths: each secret field at the top level and up to three levels down. */
export const REDACTED_PATHS = PREFIXES.flatMap((prefix) => SECRET_FIELDS.map((field) => `${prefix}${field}`));

export interface LoggerSettings {
  level?: string;
  /** Where lines go; default stdout. Tests pass a stream to read them back. */
  destination?: DestinationStream;
}

export function createLogger(settings: LoggerSettings = {}): Logger {
  const options: LoggerOptions = {
    level: settings.level ?? 'info',
    redact: { paths: REDACTED_PATHS, censor: '[REDACTED]' },
    // Level names instead of numbers and ISO timestamps: readable without pino-pretty.
    formatters: { level: (label) => ({ level: label }) },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return settings.destination ? pino(options, settings.destination) : pino(options);
}

/** The stable fields of a line about one cluster. */
export const clusterFields = (key: ClusterKey) => ({ namespace: key.namespace, name: key.name });

/** `From→To`, with ∅ for a cluster seen for the first time. */
export const transitionOf = (from: string | undefined, to: string) => `${from ?? '∅'}→${to}`;

/** An error's message, bounded: API errors can embed whole response bodies. */
export function describeError(error: unknown, limit = 1024): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.length > limit ? `${message.slice(0, limit)}…` : message;
}
