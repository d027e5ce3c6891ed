/**
 * The Flux Kustomization `spec.healthCheckExprs` entries, one per kind (PostgresCluster, PostgresDatabase;
 * CEL, Flux >= 2.5). Every kind publishes the same summary conditions, so the expressions are the same
 * and only `kind` differs.
 *
 * Flux evaluates inProgress, failed, current in that order and takes the first true one, with
 * InProgress when none holds; an expression that errors (a missing field) stalls the health check
 * until its timeout. So every field below is guarded with `has()`, `exists` is used rather than
 * `filter(...).all(...)` (which is true on an empty list, i.e. before any condition is published), and
 * the three expressions partition every object that has a status: exactly one of them is true.
 * An object with no status at all cannot be read (CEL has no way to test a missing top-level
 * variable); Flux keeps waiting on it, which is the InProgress we want anyway.
 */
import { stringify } from 'yaml';
import { API_VERSION } from '../../operator/api/schema.ts';
import { type HealthKind, plural } from './kinds.ts';
import { columns, generatedNotice, listed, READY, STALLED, variantLabel } from './notice.ts';
import type { ExpectedStatus } from './table.ts';

export interface HealthCheckExprs {
  apiVersion: string;
  kind: string;
  inProgress: string;
  failed: string;
  current: string;
}

/** Some condition of one of `types` is True; False when no conditions are published yet. */
const anyTrue = (...types: string[]) => {
  const type = types.length === 1 ? `c.type == '${types[0]}'` : `c.type in [${types.map((t) => `'${t}'`).join(', ')}]`;
  return `(has(status.conditions) && status.conditions.exists(c, ${type} && c.status == 'True'))`;
};
/** kstatus and Flux call a resource being deleted Terminating/in progress, whatever its conditions. */
const deleting = 'has(metadata.deletionTimestamp)';
/** Conditions describe the current spec only once pgfsm has observed its generation. */
const observed = '(has(status.observedGeneration) && status.observedGeneration == metadata.generation)';
const stalled = anyTrue(STALLED);
const ready = anyTrue(READY);
// One operand a line: CEL ignores the newlines, and YAML then prints each expression as a readable block.
const anyOf = (...terms: string[]) => terms.join('\n|| ');
const allOf = (...terms: string[]) => terms.join('\n&& ');

export function healthCheckExprs(kind: string): HealthCheckExprs {
  return {
    apiVersion: API_VERSION,
    kind,
    inProgress: anyOf(deleting, `!${observed}`, `!${anyTrue(STALLED, READY)}`),
    failed: allOf(`!${deleting}`, observed, stalled),
    current: allOf(`!${deleting}`, observed, `!${stalled}`, ready),
  };
}

function verdictComment(table: ExpectedStatus[]): string {
  const rows = [
    ['state', 'Ready', 'Reconciling', 'Stalled', 'result'],
    ...table.map((r) => [variantLabel(r.state, r.variant), r.ready, r.reconciling, r.stalled, r.flux]),
  ];
  return columns(rows)
    .map((line) => `#   ${line}`.trimEnd())
    .join('\n');
}

/**
 * A fragment to merge into a Kustomization that applies these kinds (with `spec.wait: true`): one entry per
 * kind, each kept whether or not the Kustomization applies objects of it (Flux only reads the entry of a
 * kind it applies).
 */
export function renderFluxHealthCheckExprs(kinds: HealthKind[]): string {
  const fragment = { spec: { healthCheckExprs: kinds.map((k) => healthCheckExprs(k.kind)) } };
  const applied = listed(
    kinds.map((k) => plural(k.kind)),
    'or',
  );
  const suspendable = kinds.filter((k) => k.table.some((r) => r.suspended)).map((k) => plural(k.kind));
  return [
    `# ${generatedNotice(kinds.map((k) => k.source))}`,
    `# Merge into a Flux Kustomization (kustomize.toolkit.fluxcd.io/v1, Flux >= 2.5) that applies ${applied}.`,
    ...(suspendable.length > 0
      ? [
          `# Suspended ${listed(suspendable)} stay InProgress: nobody reconciles them, so dependants must not start on them.`,
        ]
      : []),
    ...kinds.flatMap(({ kind, table }) => [
      `# What each state of the ${kind} machine publishes and the result these expressions give it`,
      '# (objects in the Deleting phase always carry a deletionTimestamp, hence InProgress):',
      verdictComment(table),
    ]),
    stringify(fragment, { lineWidth: 0 }),
  ].join('\n');
}
