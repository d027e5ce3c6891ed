/**
 * The backup objects in the lifecycle (issue 36): their judgment (domain/backup/judge.ts), the guards and states
 * that write them (the Restore step, the Cluster step, Ready), BackupsReady and status.backup / status.restore, and
 * what deletion does with them.
 */
import { describe, expect, it } from 'vitest';
import { restoreState } from '../../../machines/state-path.ts';
import { tickMachine } from '../../../machines/tick.ts';
import { projectStatus } from '../../../src/operator/core/status.ts';
import { assessTick, restoreWaiting } from '../../../src/operator/domain/assessment.ts';
import { BACKUP_POLL_MS } from '../../../src/operator/domain/backup/judge.ts';
import { BACKUPS_READY, backupsConditionOf } from '../../../src/operator/domain/backup/status.ts';
import { planDeletionPolicy, policyApplied } from '../../../src/operator/domain/deletion.ts';
import type { Effect } from '../../../src/operator/domain/effects.ts';
import type { Observation, TickEvent } from '../../../src/operator/domain/observation.ts';
import { ADOPT_ANNOTATION } from '../../../src/operator/domain/vocabulary.ts';
import {
  type BackupVariant,
  backedUp,
  type RestoreVariant,
  restoring,
  switchedOff,
} from '../../../src/tools/fixtures/backups.ts';
import { type Facts, FOREIGN_OWNER, healthyFacts, tickOf } from '../../../src/tools/fixtures/observations.ts';

const NEW: Partial<Facts> = { cnpg: 'missing', rolesState: 'notPushed', poolers: 'missing', configMap: 'missing' };

const world = (edit: (o: Observation) => void, facts: Partial<Facts> = {}): TickEvent => {
  const tick = tickOf({ ...healthyFacts, ...facts });
  edit(tick.observation);
  return tick;
};
const backed = (v: BackupVariant, more: (o: Observation) => void = () => {}) =>
  world((o) => {
    backedUp(o, v);
    more(o);
  });
const restored = (v: RestoreVariant) => world((o) => restoring(o, v), NEW);

const writes = (effects: Effect[]) =>
  effects.flatMap((e) =>
    e.type === 'apply'
      ? [`${e.object.kind} ${e.object.metadata.name}`]
      : e.type === 'delete'
        ? [`delete ${e.ref.kind} ${e.ref.name}`]
        : [],
  );
const off = (pluginRemoved: boolean, more: (o: Observation) => void = () => {}) =>
  world((o) => {
    switchedOff(o, pluginRemoved);
    more(o);
  });

/** One tick from `from`: the state reached and the objects written. */
const step = (from: string, tick: TickEvent) => {
  const snapshot = restoreState(from);
  if (!snapshot) throw new Error(`no state ${from}`);
  const { taken, effects } = tickMachine(snapshot, tick);
  return { to: JSON.stringify(taken.value), writes: writes(effects) };
};

describe('judgeBackups', () => {
  it('nothing for a cluster without a backup policy or a restore', () => {
    expect(assessTick(tickOf(healthyFacts)).backup).toBeUndefined();
  });

  it('missing objects: the store with the CNPG Cluster, the ScheduledBackup once it is healthy', () => {
    const judged = assessTick(backed('objectsMissing')).backup;
    expect(writes(judged?.store ?? [])).toEqual(['ObjectStore orders-backups']);
    expect(writes(judged?.schedule ?? [])).toEqual(['ScheduledBackup orders-scheduled']);
    expect(judged?.problem).toBeUndefined();
  });

  it("an ownerless store is adopted only when handed over; someone else's never", () => {
    const nobody = assessTick(backed('storeOfNobody')).backup;
    expect(nobody?.store).toEqual([]);
    expect(nobody?.problem?.reason).toBe('BackupObjectNotAdoptable');
    expect(nobody?.problem?.message).toContain('objectstores.barmancloud.cnpg.io orders-backups pgfsm.io/adopt=true');
    const handedOver = assessTick(
      backed('storeOfNobody', (o) => {
        const store = o.backup?.store;
        if (store) store.metadata.annotations = { [ADOPT_ANNOTATION]: 'true' };
      }),
    ).backup;
    expect(writes(handedOver?.store ?? [])).toEqual(['ObjectStore orders-backups']);
    const foreign = assessTick(
      backed('archiving', (o) => {
        const store = o.backup?.store;
        if (store) store.metadata.ownerReferences = [FOREIGN_OWNER];
      }),
    ).backup;
    expect(foreign?.store).toEqual([]);
    expect(foreign?.problem?.message).toBe('ObjectStore orders-backups is controlled by Deployment/someone-else');
  });

  it('a token on a cluster that is not backed up is refused, and said so in BackupsReady', () => {
    const tick = tickOf(healthyFacts);
    tick.observation.cluster.metadata.annotations = { 'pgfsm.io/backup-now': '1764504000' };
    const judged = assessTick(tick).backup;
    expect(judged?.schedule).toEqual([]);
    expect(judged && backupsConditionOf(judged, false)).toMatchObject({
      status: 'False',
      reason: 'BackupRequestRefused',
      message: expect.stringContaining('this cluster is not backed up'),
    });
  });

  it('a new token asks for one Backup; once it exists the status records the token', () => {
    const asked = assessTick(backed('backupAsked')).backup;
    expect(writes(asked?.schedule ?? [])).toEqual([expect.stringMatching(/^Backup orders-backup-[0-9a-f]{12}$/)]);
    expect(asked?.acted).toBeUndefined();
    const created = asked?.schedule[0];
    const done = assessTick(
      backed('backupAsked', (o) => {
        if (o.backup && created?.type === 'apply') o.backup.onDemand = structuredClone(created.object) as never;
      }),
    ).backup;
    expect(done?.schedule).toEqual([]);
    expect(done?.acted).toEqual({ token: '1764504000', backup: expect.stringMatching(/^orders-backup-/) });
  });

  it('a Backup CloudNativePG leaves pending past the deadline is said in BackupsReady, and looked at once a minute', () => {
    const tick = backed('backupStuck');
    const stuck = assessTick(tick).backup;
    expect(stuck?.problem?.reason).toBe('BackupPending');
    expect(stuck?.problem?.message).toMatch(/^Backup orders-backup-[0-9a-f]{12} pending since 2026-11-30T02:30:41Z: /);
    expect(stuck?.recheckAt).toBe(tick.now + 60_000);
    expect(backupsConditionOf(stuck as never, true)).toMatchObject({ status: 'False', reason: 'BackupPending' });
    // Within the deadline it is a backup on its way: no problem, looked at every 5 s.
    const fresh = backed('backupStuck', (o) => {
      if (o.backup?.onDemand) o.backup.onDemand.metadata.creationTimestamp = '2026-11-30T11:55:00Z';
    });
    const waiting = assessTick(fresh).backup;
    expect(waiting?.problem).toBeUndefined();
    expect(waiting?.recheckAt).toBe(fresh.now + BACKUP_POLL_MS);
  });

  it('a running backup is looked at again soon; a finished one, and a cluster not backing up, are not', () => {
    const asked = assessTick(backed('backupAsked')).backup?.schedule[0];
    if (asked?.type !== 'apply') throw new Error('no Backup asked for');
    const running = backed('backupAsked', (o) => {
      if (o.backup) o.backup.onDemand = { ...structuredClone(asked.object), status: { phase: 'running' } } as never;
    });
    expect(assessTick(running).recheckAt).toBe(running.now + BACKUP_POLL_MS);
    const completed = backed('backupAsked', (o) => {
      if (o.backup) o.backup.onDemand = { ...structuredClone(asked.object), status: { phase: 'completed' } } as never;
    });
    expect(assessTick(completed).recheckAt).toBeUndefined();
    // A scheduled backup: only CNPG's condition says it runs.
    const scheduled = backed('archiving', (o) => {
      const conditions = o.cnpg?.status?.conditions ?? [];
      for (const c of conditions) if (c.type === 'LastBackupSucceeded') Object.assign(c, { reason: 'BackupStarted' });
    });
    expect(assessTick(scheduled).recheckAt).toBe(scheduled.now + BACKUP_POLL_MS);
    expect(assessTick(tickOf(healthyFacts)).recheckAt).toBeUndefined();
  });

  it('the Backup a token asked for is reported in BackupsReady as CNPG reports it', () => {
    const asked = assessTick(backed('backupAsked')).backup?.schedule[0];
    if (asked?.type !== 'apply') throw new Error('no Backup asked for');
    const withBackup = (status: object) =>
      backed('backupAsked', (o) => {
        if (o.backup) o.backup.onDemand = { ...structuredClone(asked.object), status } as never;
      });
    const messageOf = (status: object) => {
      const judged = assessTick(withBackup(status)).backup;
      return judged && backupsConditionOf(judged, true)?.message;
    };
    expect(messageOf({ phase: 'running', startedAt: '2026-11-30T11:59:00Z' })).toMatch(
      /; Backup orders-backup-[0-9a-f]{12} running since 2026-11-30T11:59:00Z$/,
    );
    expect(messageOf({ phase: 'completed', stoppedAt: '2026-11-30T12:01:00Z' })).toMatch(
      /completed at 2026-11-30T12:01:00Z$/,
    );
    expect(messageOf({ phase: 'failed', error: 'no space left' })).toMatch(/failed: no space left$/);
  });

  it('BackupsReady: working, not yet known, failing with why, misconfigured naming the class field', () => {
    const of = (v: BackupVariant) => {
      const judged = assessTick(backed(v)).backup;
      return judged && backupsConditionOf(judged, true);
    };
    expect(of('archiving')).toMatchObject({ status: 'True', reason: 'ContinuousArchivingWorking' });
    expect(of('archivingUnknown')).toMatchObject({ status: 'Unknown', reason: 'ContinuousArchivingUnknown' });
    expect(of('archivingFailing')).toMatchObject({
      status: 'False',
      reason: 'ContinuousArchivingFailing',
      message: expect.stringContaining('unexpected end of stream (403)'),
    });
    expect(of('credentialsMissing')).toMatchObject({
      status: 'False',
      message: expect.stringMatching(/^class standard spec\.backup\.objectStore\.credentials\.secretName: /),
    });
    expect(of('tokenRefused')?.reason).toBe('BackupRequestRefused');
  });
});

describe('the lifecycle with backups', () => {
  it('a cluster that is not restored passes the Restore step in the same tick', () => {
    expect(step('Provisioning.Secret', tickOf({ ...healthyFacts, ...NEW })).to).toBe('{"Provisioning":"Cluster"}');
  });

  it('a restore waits for its source, writes its source store, then the CNPG Cluster; a bad target fails', () => {
    expect(step('Provisioning.Secret', restored('sourceMissing'))).toEqual({
      to: '{"Provisioning":"Restore"}',
      writes: [],
    });
    expect(step('Provisioning.Secret', restored('sourceReady'))).toEqual({
      to: '{"Provisioning":"Restore"}',
      writes: ['ObjectStore orders-restore-source'],
    });
    expect(step('Provisioning.Secret', restored('storeReady'))).toEqual({
      to: '{"Provisioning":"Cluster"}',
      writes: ['Cluster orders'],
    });
    expect(step('Provisioning.Secret', restored('targetTooEarly')).to).toBe('{"Failed":"Cluster"}');
    expect(restoreWaiting(assessTick(restored('storeReady')))).toBe(false);
  });

  it('a new backed-up cluster writes its store before its CNPG Cluster', () => {
    const tick = world((o) => backedUp(o, 'objectsMissing'), NEW);
    expect(step('Provisioning.Secret', tick).writes).toEqual(['ObjectStore orders-backups', 'Cluster orders']);
  });

  it('a new cluster is not created pointing at a store of its name that is not its own, nor restored through one', () => {
    const nobody = world((o) => backedUp(o, 'storeOfNobody'), NEW);
    expect(step('Provisioning.Secret', nobody)).toEqual({ to: '{"Failed":"Cluster"}', writes: [] });
    expect(assessTick(nobody).health.cluster?.reason).toBe('BackupObjectNotAdoptable');
    const foreignSource = world((o) => {
      restoring(o, 'storeReady');
      const store = o.backup?.sourceStore;
      if (store) store.metadata.ownerReferences = [FOREIGN_OWNER];
    }, NEW);
    expect(step('Provisioning.Secret', foreignSource)).toEqual({ to: '{"Provisioning":"Restore"}', writes: [] });
  });

  it('Ready writes the ScheduledBackup and a requested Backup without leaving, each once per tick', () => {
    expect(step('Provisioning.Secret', backed('objectsMissing'))).toEqual({
      to: '"Ready"',
      writes: ['ObjectStore orders-backups', 'ScheduledBackup orders-scheduled'],
    });
    expect(step('Ready', backed('objectsMissing'))).toEqual({
      to: '"Ready"',
      writes: ['ObjectStore orders-backups', 'ScheduledBackup orders-scheduled'],
    });
    expect(step('Ready', backed('archiving'))).toEqual({ to: '"Ready"', writes: [] });
    expect(step('Ready', backed('backupAsked')).writes).toEqual([expect.stringMatching(/^Backup orders-backup-/)]);
  });

  it('a failing archive does not take Ready away: BackupsReady says it', () => {
    expect(step('Ready', backed('archivingFailing'))).toEqual({ to: '"Ready"', writes: [] });
  });
});

describe('switching backups off', () => {
  it('deletes the ScheduledBackup at once, and the ObjectStore once the CNPG Cluster no longer names it', () => {
    expect(writes(assessTick(off(false)).backup?.schedule ?? [])).toEqual(['delete ScheduledBackup orders-scheduled']);
    const removed = assessTick(off(true));
    expect(writes(removed.backup?.schedule ?? [])).toEqual([
      'delete ScheduledBackup orders-scheduled',
      'delete ObjectStore orders-backups',
    ]);
    // Not backed up any more: no BackupsReady, and no write of a backup object.
    expect(removed.backup?.store).toEqual([]);
    expect(removed.backup?.problem).toBeUndefined();
    expect(step('Ready', off(true))).toEqual({
      to: '"Ready"',
      writes: ['delete ScheduledBackup orders-scheduled', 'delete ObjectStore orders-backups'],
    });
  });

  it('leaves alone what is not its own, and judges nothing once they are gone', () => {
    const foreign = off(true, (o) => {
      for (const object of [o.backup?.scheduled, o.backup?.store]) {
        if (object) object.metadata.ownerReferences = [FOREIGN_OWNER];
      }
    });
    expect(assessTick(foreign).backup).toBeUndefined();
    const gone = off(true, (o) => {
      o.backup = { secrets: {} };
    });
    expect(assessTick(gone).backup).toBeUndefined();
  });

  it('a class without a policy any more retires them the same way', () => {
    const classless = off(true, (o) => {
      if (o.clusterClass) o.clusterClass = { ...o.clusterClass, spec: { ...o.clusterClass.spec, backup: undefined } };
    });
    expect(writes(assessTick(classless).backup?.schedule ?? [])).toContain('delete ScheduledBackup orders-scheduled');
  });
});

describe('status and deletion', () => {
  const statusOf = (tick: TickEvent, state = 'Ready') =>
    projectStatus({
      state,
      meta: {
        description: '',
        phase: 'Ready',
        conditions: 'pipeline',
        ready: true,
        reconciling: false,
        stalled: false,
        deadline: false,
        requeue: 'none',
      },
      assessment: assessTick(tick),
      previous: tick.observation.cluster.status,
      now: tick.now,
      since: tick.now,
      settings: tick.settings,
    });

  it('status.backup names the archive and the window; BackupsReady only on a backed-up cluster', () => {
    const status = statusOf(backed('archiving'));
    expect(status.backup).toEqual({
      serverName: 'orders-uid-orde',
      destinationPath: 's3://pg-backups/prod/team-a/',
      objectStore: 'orders-backups',
      firstRecoverabilityPoint: '2026-11-30T02:30:41Z',
      lastSuccessfulBackupTime: '2026-11-30T02:30:41Z',
    });
    expect(status.conditions?.find((c) => c.type === BACKUPS_READY)?.status).toBe('True');
    const plain = statusOf(tickOf(healthyFacts));
    expect(plain.backup).toBeUndefined();
    expect(plain.conditions?.map((c) => c.type)).not.toContain(BACKUPS_READY);
  });

  it('a switched-off cluster keeps status.backup until its ScheduledBackup and ObjectStore are gone', () => {
    const recorded = {
      serverName: 'orders-uid-orde',
      destinationPath: 's3://pg-backups/prod/team-a/',
      objectStore: 'orders-backups',
    };
    expect(statusOf(off(true)).backup).toEqual(recorded);
    expect(statusOf(off(true)).conditions?.map((c) => c.type)).not.toContain(BACKUPS_READY);
    const gone = off(true, (o) => {
      o.backup = { secrets: {} };
    });
    expect(statusOf(gone).backup).toBeUndefined();
  });

  it('status.restore is recorded once the CNPG Cluster exists, from the source its spec names', () => {
    const restoredTick = restored('storeReady');
    expect(statusOf(restoredTick, 'Provisioning.Cluster').restore).toBeUndefined();
    const desired = assessTick(restoredTick).plans.cluster.find((e) => e.type === 'apply');
    if (desired?.type !== 'apply') throw new Error('no CNPG Cluster planned');
    restoredTick.observation.cnpg = structuredClone(desired.object) as never;
    expect(statusOf(restoredTick, 'Provisioning.Cluster').restore).toEqual({ serverName: 'billing-uid-bill' });
  });

  it('Retain releases the backup objects, Delete deletes them; the bucket is no object pgfsm touches', () => {
    const deleting = (policy: 'Retain' | 'Delete') =>
      world((o) => backedUp(o, 'archiving'), { deletion: true, poolers: 'missing', policy }).observation;
    const retained = planDeletionPolicy(deleting('Retain'));
    expect(retained.filter((e) => e.type === 'releaseOwner').map((e) => 'ref' in e && e.ref.kind)).toEqual([
      'Cluster',
      'Secret',
      'ConfigMap',
      'ObjectStore',
      'ScheduledBackup',
    ]);
    const deleted = planDeletionPolicy(deleting('Delete'));
    expect(deleted.filter((e) => e.type === 'delete').map((e) => 'ref' in e && e.ref.kind)).toContain('ObjectStore');
    expect(policyApplied(deleting('Delete'))).toBe(false);
  });
});
