/**
 * A PostgresDatabase's Events go through an outbox (src/operator/driver/database-outbox.ts): sent after the pass,
 * in order, and what the sink refuses waits for the database's next pass instead of being lost (issue 37: the
 * random-fault story lost a database's Events whenever the sink refused one).
 */
import { describe, expect, it } from 'vitest';
import { PortError } from '../../../src/operator/core/errors.ts';
import type { EventSubject } from '../../../src/operator/core/ports.ts';
import type { KubeEvent } from '../../../src/operator/domain/effects.ts';
import { DatabaseOutbox, MAX_ATTEMPTS } from '../../../src/operator/driver/database-outbox.ts';

const database: EventSubject = {
  apiVersion: 'pgfsm.io/v1alpha1',
  kind: 'PostgresDatabase',
  metadata: { name: 'shop', namespace: 'ns' },
};
const event = (reason: string) => ({ type: 'Normal', reason, action: reason, message: reason }) as KubeEvent;
const KEY = 'PostgresDatabase:ns/shop';

/** A sink that refuses the reasons in `refuse` (with `errorClass`), and records what it sent. */
function sink(errorClass: 'unavailable' | 'notLeader' = 'unavailable') {
  const sent: string[] = [];
  const refuse = new Set<string>();
  return {
    sent,
    refuse,
    emit: async (_regarding: EventSubject, e: KubeEvent) => {
      if (refuse.has(e.reason)) throw new PortError(errorClass, `refused ${e.reason}`);
      sent.push(e.reason);
    },
  };
}

/** One pass's Events, as a pass hands them over: collected, then sent. */
async function pass(outbox: DatabaseOutbox, reasons: string[]) {
  const { sink: collecting, parcels } = outbox.collector();
  for (const reason of reasons) await collecting.emit(database, event(reason));
  return outbox.send(KEY, parcels);
}

describe('the outbox of a database’s Events', () => {
  it('sends them in order; one refused stops the line, and it and those behind it go first at the next pass', async () => {
    const events = sink();
    const outbox = new DatabaseOutbox(events);
    events.refuse.add('CNPGDatabaseCreated');
    const first = await pass(outbox, ['SecretsCreated', 'CNPGDatabaseCreated', 'PrivilegesGranted']);
    expect(first).toEqual({ sent: [event('SecretsCreated')], waiting: true });
    expect(outbox.keys()).toEqual([KEY]);
    events.refuse.clear();
    const second = await pass(outbox, ['Ready']);
    expect(second.waiting).toBe(false);
    expect(events.sent).toEqual(['SecretsCreated', 'CNPGDatabaseCreated', 'PrivilegesGranted', 'Ready']);
    expect(outbox.keys()).toEqual([]);
  });

  it('drops what fails pass after pass, but not for want of the lease; a new term of another replica forgets', async () => {
    const refusing = sink();
    const outbox = new DatabaseOutbox(refusing);
    refusing.refuse.add('Ready');
    for (let i = 1; i < MAX_ATTEMPTS; i++) expect((await pass(outbox, i === 1 ? ['Ready'] : [])).waiting).toBe(true);
    expect((await pass(outbox, [])).waiting).toBe(false);
    expect(outbox.keys()).toEqual([]);

    const notLeading = sink('notLeader');
    const fenced = new DatabaseOutbox(notLeading);
    notLeading.refuse.add('Ready');
    for (let i = 0; i < 3 * MAX_ATTEMPTS; i++) await pass(fenced, i === 0 ? ['Ready'] : []);
    expect(fenced.keys()).toEqual([KEY]);
    fenced.forget();
    expect(fenced.keys()).toEqual([]);
  });
});
