/** Helpers for behaviour tests on the simulation: a class, clusters, and readers for their status. */

import type { StoredObject } from '../../src/adapters/memory/api-server.ts';
import type { Condition, PostgresCluster, PostgresClusterClass, PostgresClusterSpec } from '../../src/api/schema.ts';
import { Simulation, type SimulationOptions } from '../../src/sim/simulation.ts';
import { makeClass } from './observations.ts';

export const NS = 'team-a';

/** The fixtures' class as the in-memory API stores it, with one instance by default (simulations stay quick). */
export function standardClass(overrides: Partial<PostgresClusterClass['spec']> = {}): StoredObject {
  const cls = makeClass(overrides);
  const config = overrides.config ?? { ...cls.spec.config, instances: 1 };
  return {
    ...cls,
    metadata: { name: cls.metadata.name, namespace: '' },
    spec: { ...cls.spec, config },
  } as StoredObject;
}

export function clusterObject(name: string, spec: Partial<PostgresClusterSpec> = {}): StoredObject {
  return {
    apiVersion: 'pgfsm.io/v1alpha1',
    kind: 'PostgresCluster',
    metadata: { name, namespace: NS },
    spec: { class: 'standard', ...spec },
  } as unknown as StoredObject;
}

export function passwordSecret(name: string, username: string): StoredObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace: NS },
    stringData: { username, password: `pw-${username}` },
  } as unknown as StoredObject;
}

/** A simulation with the standard class and the given clusters created. */
export function simulationWith(clusters: StoredObject[], options: SimulationOptions = {}): Simulation {
  const sim = new Simulation(options);
  sim.api.create(standardClass());
  for (const c of clusters) sim.api.create(c);
  return sim;
}

export const getCluster = (sim: Simulation, name: string) =>
  sim.api.get<PostgresCluster>({ kind: 'PostgresCluster', namespace: NS, name });

export function statusOf(sim: Simulation, name: string) {
  const cluster = getCluster(sim, name);
  if (!cluster?.status) throw new Error(`${name} has no status`);
  return cluster.status;
}

export function conditionOf(sim: Simulation, name: string, type: string): Condition {
  const found = statusOf(sim, name).conditions?.find((c) => c.type === type);
  if (!found) throw new Error(`${name} has no condition ${type}`);
  return found;
}

/** `type=status/reason` for every condition, for compact assertions. */
export const conditionSummary = (sim: Simulation, name: string) =>
  Object.fromEntries((statusOf(sim, name).conditions ?? []).map((c) => [c.type, `${c.status}/${c.reason}`]));

export const eventsOf = (sim: Simulation, name: string) => sim.events.events.filter((e) => e.regarding.name === name);

export const reasonsOf = (sim: Simulation, name: string) => eventsOf(sim, name).map((e) => e.reason);

export function editSpec(sim: Simulation, name: string, edit: (spec: PostgresClusterSpec) => PostgresClusterSpec) {
  const cluster = getCluster(sim, name);
  if (!cluster) throw new Error(`${name} not found`);
  sim.api.put({ ...cluster, spec: edit(cluster.spec) } as unknown as StoredObject);
}

/** Runs until the cluster is Ready (or fails after `limitMs` of virtual time). */
export async function untilReady(sim: Simulation, name: string, limitMs = 10 * 60_000) {
  const until = sim.clock.now() + limitMs;
  while (sim.clock.now() < until) {
    await sim.run(5_000);
    if (getCluster(sim, name)?.status?.state === 'Ready') return;
  }
  throw new Error(`${name} not Ready after ${limitMs} ms: ${getCluster(sim, name)?.status?.state}`);
}

/** The `data` of a ConfigMap or Secret (Secrets: base64, as stored). */
export const dataOf = (sim: Simulation, kind: 'ConfigMap' | 'Secret', name: string) =>
  (sim.api.get({ kind, namespace: NS, name }) as unknown as { data?: Record<string, string> } | undefined)?.data;
