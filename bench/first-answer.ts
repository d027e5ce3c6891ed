/**
 * The clock of the real-node benches: from a create to the first moment an application could have had an answer.
 * The client knows the Service name from the start and tries every 250 ms as soon as the Secret holds a login.
 */
import { CoreV1Api } from '@kubernetes/client-node';
import pg from 'pg';
import type { RealNode } from '../src/tools/node/node.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface Probe {
  /** What to ask (default `SELECT 1`). */
  sql?: string;
  /** Whether the answer counts (default: any answer); a restore's first answer must hold the rows. */
  accept?: (rows: Record<string, unknown>[]) => boolean;
}

/** Seconds from `began` to the first accepted answer through `host:5432`, logged in with `secret`'s keys. */
export async function firstAnswer(
  node: RealNode,
  host: string,
  secret: { namespace: string; name: string },
  began: number,
  probe: Probe = {},
): Promise<number> {
  const core = node.kubeConfig.makeApiClient(CoreV1Api);
  const port = await node.gateway.open(host, 5432);
  for (;;) {
    if (Date.now() - began > 600_000) throw new Error(`no answer through ${host} after 10 minutes`);
    const credentials = await core.readNamespacedSecret(secret).catch(() => undefined);
    const data = credentials?.data;
    if (data?.username && data.password) {
      const client = new pg.Client({
        host: '127.0.0.1',
        port,
        user: Buffer.from(data.username, 'base64').toString(),
        password: Buffer.from(data.password, 'base64').toString(),
        database: 'postgres',
        connectionTimeoutMillis: 2_000,
      });
      // A server that goes away mid-session says so as an error event; the next try is the answer.
      client.on('error', () => undefined);
      try {
        await client.connect();
        const { rows } = await client.query(probe.sql ?? 'SELECT 1');
        if (probe.accept?.(rows) ?? true) return (Date.now() - began) / 1000;
      } catch {
        // not yet: no endpoint, PgBouncer not up, PostgreSQL not accepting, the table not restored yet
      } finally {
        await client.end().catch(() => undefined);
      }
    }
    await sleep(250);
  }
}
