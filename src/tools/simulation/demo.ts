/**
 * `pgfsm simulate`: the examples go through their whole lifecycle on the simulation (the shipped driver
 * and reconcile core on a virtual clock, CNPG simulated), and every transition is printed as it happens.
 */
import type { PostgresCluster } from '../../operator/api/schema.ts';
import type { ReconcileOutcome } from '../../operator/core/reconcile.ts';
import { loadManifests, readManifests } from './manifests.ts';
import { Simulation } from './simulation.ts';

export interface DemoOptions {
  examplesDir: string;
  print: (line: string) => void;
}

const minutes = (ms: number) => {
  const s = Math.round(ms / 1000);
  return `+${String(Math.floor(s / 60)).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}`;
};

export async function runDemo({ examplesDir, print }: DemoOptions): Promise<Simulation> {
  let start = 0;
  const onPass = (outcome: ReconcileOutcome, now: number) => {
    if (outcome.from === outcome.to && outcome.events.length === 0) return;
    const who = `${outcome.key.namespace}/${outcome.key.name}`.padEnd(18);
    const move = outcome.from === outcome.to ? `${outcome.to}` : `${outcome.from ?? '(new)'} → ${outcome.to}`;
    const events = outcome.events.map((e) => `${e.type === 'Warning' ? '!' : ''}${e.reason}`).join(', ');
    print(`${minutes(now - start)}  ${who} ${move.padEnd(52)} ${events}`);
  };
  const sim = new Simulation({ onPass });
  start = sim.clock.now();
  const say = (text: string) => print(`\n${minutes(sim.clock.now() - start)}  ── ${text}`);

  say(`applying the examples from ${examplesDir}`);
  loadManifests(sim.api, readManifests(examplesDir));
  await sim.run(5 * 60_000);

  say('CNPG switches over the primary of team-a/orders');
  sim.cnpg.switchover('team-a', 'orders');
  await sim.run(60_000);

  say('someone edits the endpoints ConfigMap of team-a/inventory (drift)');
  const cm = sim.api.get({ kind: 'ConfigMap', namespace: 'team-a', name: 'inventory-endpoints' });
  if (cm) sim.api.put({ ...cm, data: { ...(cm.data as Record<string, string>), CLUSTER_RW_ENDPOINT: 'elsewhere' } });
  await sim.run(60_000);

  say('team-a/inventory is scaled to 2 instances');
  const inventory = sim.api.get<PostgresCluster>({ kind: 'PostgresCluster', namespace: 'team-a', name: 'inventory' });
  if (inventory) sim.api.put({ ...inventory, spec: { ...inventory.spec, instances: 2 } } as never);
  await sim.run(3 * 60_000);

  say('team-a/orders is deleted (policy Delete); team-a/inventory is deleted (policy Retain)');
  sim.api.delete({ kind: 'PostgresCluster', namespace: 'team-a', name: 'orders' });
  sim.api.delete({ kind: 'PostgresCluster', namespace: 'team-a', name: 'inventory' });
  await sim.run(2 * 60_000);

  const left = ['Cluster', 'Secret', 'ConfigMap', 'Pooler']
    .flatMap((kind) => sim.api.list(kind, 'team-a').map((o) => `${kind}/${o.metadata.name}`))
    .filter((n) => !n.includes('password'));
  say(`done: ${sim.passes.length} reconcile passes, ${sim.events.events.length} events; retained: ${left.join(', ')}`);
  return sim;
}
