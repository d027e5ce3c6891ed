/** The examples the sandbox applies: read from a directory, ordered as a person would apply them. */
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { applyManifests, describeObject, manifestFiles, readManifests } from '../install/manifests.ts';
import type { Output } from './output.ts';
import { keyOf } from './progress.ts';

/** The namespace of the examples, and the default of `s <cluster>` and `sandbox switchover <name>`. */
export const EXAMPLES_NAMESPACE = 'team-a';

/**
 * Classes and Secrets before the clusters that name them, clusters before their databases (the operator would
 * wait, but reads better).
 */
const KIND_ORDER = ['Namespace', 'PostgresClusterClass', 'Secret', 'PostgresCluster', 'PostgresDatabase'];
const rank = (o: KubernetesObject) => {
  const i = KIND_ORDER.indexOf(o.kind ?? '');
  return i < 0 ? KIND_ORDER.length : i;
};

const namespaceOf = (o: KubernetesObject) => o.metadata?.namespace ?? EXAMPLES_NAMESPACE;

export interface Examples {
  objects: KubernetesObject[];
  /** `namespace/name` of each PostgresCluster. */
  clusters: string[];
  /** `namespace/name` of each PostgresDatabase. */
  databases: string[];
}

const keysOf = (objects: KubernetesObject[], kind: string) =>
  objects
    .filter((o) => o.kind === kind)
    .map((o) => keyOf({ metadata: { name: o.metadata?.name ?? '', namespace: namespaceOf(o) } }));

export function readExamples(dir: string): Examples {
  const objects = readManifests(manifestFiles(dir)).sort((a, b) => rank(a) - rank(b));
  const clusters = keysOf(objects, 'PostgresCluster');
  if (clusters.length === 0) throw new Error(`no PostgresCluster in ${dir}`);
  return { objects, clusters, databases: keysOf(objects, 'PostgresDatabase') };
}

/** The examples without their PostgresDatabases. */
export function withoutDatabases({ objects, clusters }: Examples): Examples {
  return { objects: objects.filter((o) => o.kind !== 'PostgresDatabase'), clusters, databases: [] };
}

/**
 * The namespaces the examples need first (a namespace must exist before anything in it), then the examples.
 * What is applied is listed up front, and `beforeApply` runs last, so progress lines come after the list.
 */
export async function applyExamples(
  kc: KubeConfig,
  { objects }: Examples,
  out: Output,
  beforeApply: () => void,
): Promise<void> {
  const namespaced = objects.filter((o) => o.kind !== 'PostgresClusterClass' && o.kind !== 'Namespace');
  const namespaces = [...new Set(namespaced.map(namespaceOf))];
  out.detail(`Namespace ${namespaces.join(', ')}`);
  for (const object of objects) out.detail(describeObject(object));
  beforeApply();
  await applyManifests(
    kc,
    namespaces.map((name) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } })),
  );
  await applyManifests(
    kc,
    objects.map((o) =>
      o.kind === 'PostgresClusterClass' || o.kind === 'Namespace'
        ? o
        : { ...o, metadata: { ...o.metadata, namespace: namespaceOf(o) } },
    ),
  );
}
