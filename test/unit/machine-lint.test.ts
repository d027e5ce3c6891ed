/**
 * Lint of each lifecycle statechart's structure (the PostgresCluster's and the PostgresDatabase's): one
 * event (`tick`), every named guard and action implemented, every state declaring its meta, and nothing
 * that makes the machine impure or timed (`invoke`, `after`). The lint itself is checked against a machine
 * that breaks every rule.
 */
import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import { type AnyStateMachine, type AnyStateNode, createMachine } from 'xstate';
import { getStateNodes } from 'xstate/graph';
import type { StateMeta } from '../../machines/meta.ts';
import { postgresClusterMachine } from '../../machines/postgres-cluster.ts';
import { postgresDatabaseMachine } from '../../machines/postgres-database.ts';
import { Phase } from '../../src/operator/api/schema.ts';
import { DATABASE_COMPONENTS } from '../../src/operator/domain/database/vocabulary.ts';
import { COMPONENTS } from '../../src/operator/domain/vocabulary.ts';

interface Reference {
  kind: 'guard' | 'action';
  where: string;
  name: string | undefined;
}

/** Every state node of a machine, the root included. */
const nodesOf = (machine: AnyStateMachine): AnyStateNode[] => [machine.root, ...getStateNodes(machine.root)];

type AnyTransition = AnyStateNode['always'] extends (infer T)[] | undefined ? T : never;

/** Every transition of a node: the evented ones (by descriptor) and the eventless ones. */
function transitionsOf(node: AnyStateNode): Array<{ descriptor: string | null; transition: AnyTransition }> {
  const evented = [...node.transitions.entries()].flatMap(([descriptor, list]) =>
    list.map((transition) => ({ descriptor, transition })),
  );
  const eventless = (node.always ?? []).map((transition) => ({ descriptor: null, transition }));
  return [...evented, ...eventless];
}

/** The name of a guard or action reference; undefined for an inline function (it names nothing). */
function nameOf(ref: unknown): string | undefined {
  if (typeof ref === 'string') return ref;
  if (ref && typeof ref === 'object' && 'type' in ref && typeof ref.type === 'string') return ref.type;
  return undefined;
}

/** Every named guard and action a machine references, with where it is referenced. */
function referencesOf(machine: AnyStateMachine): Reference[] {
  const refs: Reference[] = [];
  for (const node of nodesOf(machine)) {
    for (const action of node.entry) refs.push({ kind: 'action', where: `#${node.id} entry`, name: nameOf(action) });
    for (const action of node.exit) refs.push({ kind: 'action', where: `#${node.id} exit`, name: nameOf(action) });
    for (const { descriptor, transition } of transitionsOf(node)) {
      const where = `#${node.id} ${descriptor ?? 'always'}`;
      if (transition.guard !== undefined) refs.push({ kind: 'guard', where, name: nameOf(transition.guard) });
      for (const action of transition.actions) refs.push({ kind: 'action', where, name: nameOf(action) });
    }
  }
  return refs;
}

/** Every rule the machine breaks, as readable lines; empty when it keeps them all. */
function lint(machine: AnyStateMachine): string[] {
  const problems: string[] = [];
  const guards = machine.implementations.guards;
  const actions = machine.implementations.actions;
  for (const node of nodesOf(machine)) {
    for (const { descriptor, transition } of transitionsOf(node)) {
      if (descriptor !== null && descriptor !== 'tick')
        problems.push(`#${node.id}: transition on event "${descriptor}"`);
      if ('delay' in transition && transition.delay !== undefined) problems.push(`#${node.id}: delayed transition`);
    }
    if (node.invoke.length !== 0) problems.push(`#${node.id}: invoke`);
    if (node.after.length !== 0) problems.push(`#${node.id}: after`);
    const leaf = node.type === 'atomic' || node.type === 'final';
    if (leaf) {
      const meta = node.meta as Partial<StateMeta> | undefined;
      if (!meta) problems.push(`#${node.id}: no meta`);
      else if (!Value.Check(Phase, meta.phase)) problems.push(`#${node.id}: meta.phase ${String(meta.phase)}`);
    }
  }
  for (const ref of referencesOf(machine)) {
    const known = ref.kind === 'guard' ? guards : actions;
    if (ref.name === undefined) problems.push(`${ref.where}: inline ${ref.kind}`);
    else if (!Object.hasOwn(known, ref.name)) problems.push(`${ref.where}: unknown ${ref.kind} "${ref.name}"`);
  }
  return problems;
}

/**
 * Every machine of machines/, with what the lint must see in it (so that it is not vacuously true) and
 * whether it writes every phase the CRD allows (the cluster does; the database writes a subset: its CRD
 * shares the cluster's Phase enum, and a database is never Degraded or Suspended).
 */
const MACHINES = [
  {
    name: 'postgresCluster',
    machine: postgresClusterMachine as AnyStateMachine,
    components: COMPONENTS as readonly string[],
    ids: [
      'postgresCluster.Pending',
      'postgresCluster.Provisioning.Secret',
      'postgresCluster.Provisioning.ConfigMap',
      'postgresCluster.Ready',
      'postgresCluster.Degraded',
      'postgresCluster.Failed.InvalidSpec',
      'postgresCluster.Failed.ManagedRoles',
      'postgresCluster.Suspended',
      'postgresCluster.Deleting.RemoveFinalizer',
      'postgresCluster.Deleted',
    ],
    minimum: { guards: 40, actions: 10 },
    // An entry action, an exit action, a transition action.
    actions: ['reconcileSecret', 'announceResumed', 'addFinalizer'],
    everyPhase: true,
  },
  {
    name: 'postgresDatabase',
    machine: postgresDatabaseMachine as AnyStateMachine,
    components: DATABASE_COMPONENTS as readonly string[],
    ids: [
      'postgresDatabase.Pending',
      'postgresDatabase.Provisioning.Cluster',
      'postgresDatabase.Provisioning.Privileges',
      'postgresDatabase.Ready',
      'postgresDatabase.Failed.InvalidSpec',
      'postgresDatabase.Failed.Roles',
      'postgresDatabase.Deleting.Database',
      'postgresDatabase.Deleting.RemoveFinalizer',
      'postgresDatabase.Deleted',
    ],
    minimum: { guards: 30, actions: 10 },
    // An entry action, two transition actions (it has no exit action).
    actions: ['reconcileSecrets', 'addFinalizer', 'announceNotReady'],
    everyPhase: false,
  },
];

describe.each(MACHINES)(
  '$name machine lint',
  ({ machine, components, ids: expectedIds, minimum, actions, everyPhase }) => {
    const leaves = getStateNodes(machine.root).filter((n) => n.type === 'atomic' || n.type === 'final');

    it('the machine keeps every rule', () => {
      expect(lint(machine)).toEqual([]);
    });

    it('the lint sees the whole machine (not vacuously true)', () => {
      const ids = nodesOf(machine).map((n) => n.id);
      for (const id of expectedIds) expect(ids).toContain(id);
      const refs = referencesOf(machine);
      expect(refs.filter((r) => r.kind === 'guard').length).toBeGreaterThan(minimum.guards);
      expect(refs.filter((r) => r.kind === 'action').length).toBeGreaterThan(minimum.actions);
    });

    it('every evented transition is on tick, and the machine accepts no other event', () => {
      const descriptors = new Set(
        nodesOf(machine).flatMap((n) => transitionsOf(n).map((t) => t.descriptor ?? 'always')),
      );
      expect([...descriptors].sort()).toEqual(['always', 'tick']);
      expect(machine.root.events).toEqual(['tick']);
    });

    it('every guard referenced is implemented', () => {
      const guards = Object.keys(machine.implementations.guards);
      const used = new Set(
        referencesOf(machine)
          .filter((r) => r.kind === 'guard')
          .map((r) => r.name),
      );
      expect(used.size).toBeGreaterThan(5);
      for (const name of used) expect(guards).toContain(name);
    });

    it('every action referenced in entry, exit and transitions is implemented', () => {
      const implemented = Object.keys(machine.implementations.actions);
      const used = new Set(
        referencesOf(machine)
          .filter((r) => r.kind === 'action')
          .map((r) => r.name),
      );
      for (const name of actions) expect(used).toContain(name);
      for (const name of used) expect(implemented).toContain(name);
    });

    it('every implemented guard is used somewhere (no dead guards)', () => {
      const used = new Set(
        referencesOf(machine)
          .filter((r) => r.kind === 'guard')
          .map((r) => r.name),
      );
      expect(Object.keys(machine.implementations.guards).filter((g) => !used.has(g))).toEqual([]);
    });

    it.each(leaves.map((n) => [n.id, n] as const))('%s declares meta with a valid phase', (_id, node) => {
      const meta = node.meta as StateMeta<string> | undefined;
      expect(meta).toBeDefined();
      expect(Value.Check(Phase, meta?.phase)).toBe(true);
      expect(meta?.description).toMatch(/\w/);
      if (meta?.step !== undefined) expect(components).toContain(meta.step);
    });

    it('writes only phases the CRD allows; the cluster every one of them (the enum documents no phase that never occurs)', () => {
      const allowed = (Phase.anyOf as Array<{ const: string }>).map((p) => p.const).sort();
      const written = [...new Set(leaves.map((n) => (n.meta as StateMeta<string> | undefined)?.phase))].sort();
      if (everyPhase) expect(written).toEqual(allowed);
      else for (const phase of written) expect(allowed).toContain(phase);
    });

    it('no state invokes an actor and none has a delayed (after) transition', () => {
      for (const node of nodesOf(machine)) {
        expect(node.invoke.length, `#${node.id} invoke`).toBe(0);
        expect(node.after.length, `#${node.id} after`).toBe(0);
        for (const { transition } of transitionsOf(node)) {
          expect('delay' in transition ? transition.delay : undefined, `#${node.id} delay`).toBeUndefined();
        }
      }
    });
  },
);

describe('the lint catches what it should', () => {
  const bad = createMachine({
    id: 'bad',
    initial: 'a',
    states: {
      a: {
        meta: { description: 'no phase' },
        entry: ['notImplemented'],
        on: { poke: { target: 'b', guard: 'noSuchGuard' } },
        after: { 1000: 'b' },
      },
      b: {
        invoke: { src: 'someActor' },
        always: { guard: () => true, target: 'c' },
      },
      c: { type: 'final', meta: { description: 'x', phase: 'Sleeping' } },
    },
  } as never) as AnyStateMachine;

  it('reports every broken rule of a bad machine', () => {
    const problems = lint(bad);
    expect(problems).toContain('#bad.a: transition on event "poke"');
    expect(problems).toContain('#bad.a: delayed transition');
    expect(problems).toContain('#bad.a: after');
    expect(problems).toContain('#bad.b: invoke');
    expect(problems).toContain('#bad.b: no meta');
    expect(problems).toContain('#bad.a: meta.phase undefined');
    expect(problems).toContain('#bad.c: meta.phase Sleeping');
    expect(problems).toContain('#bad.a entry: unknown action "notImplemented"');
    expect(problems).toContain('#bad.a poke: unknown guard "noSuchGuard"');
    expect(problems).toContain('#bad.b always: inline guard');
  });
});
