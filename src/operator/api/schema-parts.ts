/**
 * Schema pieces both resources share (schema.ts, database-schema.ts): kept apart so that neither module
 * imports the other's constants while they are still being built.
 */
import { type Static, type TSchema, Type } from '@sinclair/typebox';

export const DeletionPolicy = Type.Union([Type.Literal('Delete'), Type.Literal('Retain')]);

export const Condition = Type.Object({
  type: Type.String(),
  status: Type.Union([Type.Literal('True'), Type.Literal('False'), Type.Literal('Unknown')]),
  observedGeneration: Type.Optional(Type.Integer({ minimum: 0 })),
  lastTransitionTime: Type.String({ format: 'date-time' }),
  reason: Type.String(),
  message: Type.String(),
});

export const Phase = Type.Union(
  ['Pending', 'Provisioning', 'Ready', 'Degraded', 'Failed', 'Suspended', 'Deleting'].map((p) => Type.Literal(p)),
);

/**
 * The status fields of a resource run by a statechart: where it is, since when, and its conditions. `phase` is
 * the phases its machine has (a PostgresDatabase is never Degraded nor Suspended).
 */
export const lifecycleStatusProperties = <P extends TSchema = typeof Phase>(phase: P = Phase as unknown as P) => ({
  observedGeneration: Type.Optional(Type.Integer()),
  phase: Type.Optional(phase),
  state: Type.Optional(Type.String({ description: "The statechart's state value; the persisted source of truth" })),
  stateSince: Type.Optional(Type.String({ format: 'date-time', description: 'When the machine entered `state`' })),
  conditions: Type.Optional(
    Type.Array(Condition, { 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] }),
  ),
});

export type DeletionPolicy = Static<typeof DeletionPolicy>;
export type Condition = Static<typeof Condition>;
export type Phase = Static<typeof Phase>;
