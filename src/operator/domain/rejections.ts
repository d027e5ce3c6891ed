/**
 * Child writes the API server refused at admission (its schema, a CEL rule, CNPG's webhook). A refusal is
 * a failure of the spec, not of the moment: sending the same object again would be refused again. The
 * pass that met the refusal stores it in the PostgresCluster's status (the only memory there is); every
 * later judgment that would send that same object again sends nothing and fails instead. Any change of
 * the spec, the class or the world changes the object, so its digest, and the write is tried again.
 */
import { createHash } from 'node:crypto';
import type { RejectedWrite } from '../api/schema.ts';
import type { Effect } from './effects.ts';
import type { KubeObject } from './objects.ts';
import type { Observation } from './observation.ts';
import { type Judgment, verdict } from './verdict.ts';
import { type Component, Reason } from './vocabulary.ts';

export type { RejectedWrite };
export type RejectableComponent = RejectedWrite['component'];

/** The components whose writes carry the user's spec, and the reason of their refusal. */
export const REJECTED_REASON = {
  cluster: Reason.ClusterSpecRejected,
  managedRoles: Reason.ManagedRolesSpecRejected,
  pooler: Reason.PoolerSpecRejected,
} as const satisfies Record<RejectableComponent, Reason>;

export const isRejectable = (component: Component): component is RejectableComponent =>
  Object.hasOwn(REJECTED_REASON, component);

/** JSON with object keys sorted, so that equal objects have equal text whatever order they were built in. */
const canonical = (value: unknown): string => {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined);
    return `{${entries
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
};

/** The digest of an object as pgfsm sends it. */
export const digestOf = (object: KubeObject): string => createHash('sha256').update(canonical(object)).digest('hex');

const WHAT: Record<RejectableComponent, (name: string) => string> = {
  cluster: (name) => `CNPG cluster ${name}`,
  managedRoles: (name) => `the managed roles of CNPG cluster ${name}`,
  pooler: (name) => `Pooler ${name}`,
};

/** The condition's message: what was refused, what pgfsm does about it, and the API server's words. */
const refusedMessage = (component: RejectableComponent, object: KubeObject, refusal: string) =>
  `The API server refused ${WHAT[component](object.metadata.name)}; pgfsm does not send it again until the spec, ` +
  `the class or the world changes: ${refusal}`;

/**
 * A judgment with the refused writes taken out: a write whose object was refused before is not sent again,
 * and the component fails with what the API server said. `used` are the stored refusals that still
 * match: the status keeps those and drops the rest.
 */
export function withoutRefusedWrites(
  component: Component,
  judged: Judgment,
  stored: readonly RejectedWrite[],
): { judgment: Judgment; used: RejectedWrite[] } {
  // Hashing every object sent on every pass would be wasted work: only compare when a refusal is stored.
  if (!isRejectable(component) || !stored.some((r) => r.component === component)) {
    return { judgment: judged, used: [] };
  }
  const used: RejectedWrite[] = [];
  let message: string | undefined;
  const effects = judged.effects.filter((effect: Effect) => {
    if (effect.type !== 'apply') return true;
    const digest = digestOf(effect.object);
    const refused = stored.find((r) => r.component === component && r.digest === digest);
    if (!refused) return true;
    used.push(refused);
    message ??= refusedMessage(component, effect.object, refused.message);
    return false;
  });
  if (message === undefined) return { judgment: judged, used };
  return { judgment: { verdict: verdict('Failed', REJECTED_REASON[component], message), effects }, used };
}

/** The refusal to remember for a write the API server refused, with its words verbatim. */
export const rejectionOf = (component: RejectableComponent, object: KubeObject, refusal: string): RejectedWrite => ({
  component,
  digest: digestOf(object),
  message: refusal,
});

/** The observation as it would read once `rejection` is stored: what the pass knows after the refusal. */
export function remembering(observation: Observation, rejection: RejectedWrite): Observation {
  const { cluster } = observation;
  const others = (cluster.status?.rejectedWrites ?? []).filter(
    (r) => r.component !== rejection.component || r.digest !== rejection.digest,
  );
  return {
    ...observation,
    cluster: { ...cluster, status: { ...cluster.status, rejectedWrites: [...others, rejection] } },
  };
}
