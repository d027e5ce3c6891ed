/**
 * Schema pieces both resources share (schema.ts, database-schema.ts): kept apart so that neither module
 * imports the other's constants while they are still being built.
 */
import { type Static, type TSchema, Type } from '@sinclair/typebox';

/** A CEL rule of a CRD (`x-kubernetes-validations`), with the field it names when it sits above that field. */
export const cel = (rule: string, message: string, fieldPath?: string) => ({
  rule,
  message,
  ...(fieldPath ? { fieldPath } : {}),
});

export const DeletionPolicy = Type.Union([Type.Literal('Delete'), Type.Literal('Retain')]);

export const Condition = Type.Object(
  {
    type: Type.String({ description: 'What the condition is about, e.g. Ready; one condition per type' }),
    status: Type.Union([Type.Literal('True'), Type.Literal('False'), Type.Literal('Unknown')], {
      description: 'True, False or Unknown',
    }),
    observedGeneration: Type.Optional(
      Type.Integer({ minimum: 0, description: 'The metadata.generation of the spec the condition was judged on' }),
    ),
    lastTransitionTime: Type.String({ format: 'date-time', description: 'When status last changed' }),
    reason: Type.String({ description: 'Why, in one CamelCase word (the reasons are listed in docs/operations.md)' }),
    message: Type.String({ description: 'Why, in a sentence for people' }),
  },
  { description: 'A Kubernetes condition' },
);

export const Phase = Type.Union(
  ['Pending', 'Provisioning', 'Ready', 'Degraded', 'Failed', 'Suspended', 'Deleting'].map((p) => Type.Literal(p)),
  { description: 'Where the lifecycle stands, in one word; the Ready condition says why' },
);

/**
 * The status fields of a resource run by a statechart: where it is, since when, and its conditions. `phase` is
 * the phases its machine has (a PostgresDatabase is never Degraded nor Suspended).
 */
export const lifecycleStatusProperties = <P extends TSchema = typeof Phase>(phase: P = Phase as unknown as P) => ({
  observedGeneration: Type.Optional(
    Type.Integer({ description: 'The metadata.generation of the spec this status was written for' }),
  ),
  phase: Type.Optional({
    ...phase,
    description: 'Where the lifecycle stands, in one word; the Ready condition says why',
  }),
  state: Type.Optional(Type.String({ description: "The statechart's state value; the persisted source of truth" })),
  stateSince: Type.Optional(Type.String({ format: 'date-time', description: 'When the machine entered `state`' })),
  conditions: Type.Optional(
    Type.Array(Condition, {
      description: 'The conditions, Ready first among them; docs/operations.md lists every type and reason',
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['type'],
    }),
  ),
});

export type DeletionPolicy = Static<typeof DeletionPolicy>;
export type Condition = Static<typeof Condition>;
export type Phase = Static<typeof Phase>;
