/**
 * Manifests from YAML files onto an API server: CRDs (waiting until they are served), RBAC, examples.
 * The sandbox, the integration tests and the control-plane harness (CloudNativePG's CRDs, read from its Go
 * module, and its webhook configurations) all go through here.
 *
 * Everything is parsed with client-node's own loader, which maps wire names onto its model names: a plain
 * YAML parse handed to the typed API silently loses `enum`, `default` and `x-kubernetes-validations`,
 * because the serializer reads the model names (`_enum`, `_default`, `xKubernetesValidations`) and drops
 * the rest.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  ApiException,
  ApiextensionsV1Api,
  type KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  loadAllYaml,
  PatchStrategy,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import { parse } from 'yaml';
import { packageFile } from '../package-files.ts';
import { asModel, renderKustomization } from './kustomize.ts';

const CRD_DIR = packageFile('deploy/crds');

/**
 * pgfsm's CRDs, in the order deploy/crds/kustomization.yaml lists them: the files `kubectl apply -k deploy/`
 * installs, and the generator writes both (src/tools/generate/crds.ts), so a new kind is installed here too.
 * Only the resource list is read (rendering the CRDs themselves would parse every schema on import).
 */
export const PGFSM_CRDS: string[] = (
  (parse(readFileSync(join(CRD_DIR, 'kustomization.yaml'), 'utf8')) as { resources?: string[] } | null)?.resources ?? []
).map((file) => join(CRD_DIR, file));

/** deploy/rbac in dependency order (the kustomization's order). */
export const RBAC_MANIFESTS = [
  'namespace',
  'service-account',
  'cluster-role',
  'cluster-role-binding',
  'leader-election',
].map((f) => packageFile('deploy/rbac', `${f}.yaml`));

/** The namespaced install mode: Roles in team-a and team-b only, plus the classes cluster-wide (reading them, their finalizer). */
export const NAMESPACED_OVERLAY = packageFile('deploy/overlays/namespaced');

const RBAC_KINDS = new Set(['Namespace', 'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding']);

/**
 * The RBAC a kustomization installs (with the operator's Namespace and ServiceAccount), as the kustomize
 * subset of kustomize.ts renders it, typed for createManifests/applyManifests: what a test installs is
 * then exactly what `kubectl apply -k` would, patches included.
 */
export const rbacOf = (dir: string): KubernetesObject[] =>
  asModel(renderKustomization(dir).flatMap(({ object }) => (RBAC_KINDS.has(object.kind ?? '') ? [object] : [])));

export const CNPG_CLUSTER_CRD = 'clusters.postgresql.cnpg.io';

/** Who the API server records as the writer of what `applyManifests` applies. */
const FIELD_MANAGER = 'pgfsm-sandbox';

/** Every object of some multi-document YAML files (empty documents skipped). */
export function readManifests(files: Array<URL | string>): KubernetesObject[] {
  return files.flatMap((file) =>
    (loadAllYaml(readFileSync(file, 'utf8')) as Array<KubernetesObject | null>).filter(
      (o): o is KubernetesObject => typeof o?.kind === 'string',
    ),
  );
}

/** The `.yaml`/`.yml` files of a directory, sorted by name. */
export function manifestFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml') || f.endsWith('.yml'))
    .sort()
    .map((f) => join(dir, f));
}

export function readCrds(files: Array<URL | string>): V1CustomResourceDefinition[] {
  return readManifests(files).filter(
    (o): o is V1CustomResourceDefinition => o.kind === 'CustomResourceDefinition',
  ) as V1CustomResourceDefinition[];
}

/** `Kind namespace/name`, for messages. */
export const describeObject = (o: KubernetesObject) =>
  `${o.kind} ${o.metadata?.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata?.name ?? '?'}`;

/** The API server's own message from an error body (a Status), else the error as text. */
export function messageOf(error: unknown): string {
  const body = error instanceof ApiException ? error.body : undefined;
  if (body === undefined) return error instanceof Error ? error.message : String(error);
  try {
    const status = typeof body === 'string' ? JSON.parse(body) : body;
    return `HTTP ${(error as ApiException<unknown>).code}: ${String((status as { message?: unknown }).message ?? body)}`;
  } catch {
    return String(body);
  }
}

const failure = (verb: string, object: KubernetesObject, error: unknown) =>
  new Error(`${verb} ${describeObject(object)} failed: ${messageOf(error)}`, { cause: error });

/** Creates each object in order; any rejection (including "already exists") throws, naming the object. */
export async function createManifests(kc: KubeConfig, objects: KubernetesObject[]): Promise<void> {
  const api = KubernetesObjectApi.makeApiClient(kc);
  for (const object of objects) {
    try {
      await api.create(object);
    } catch (error) {
      throw failure('creating', object, error);
    }
  }
}

/**
 * Server-side applies each object in order: creates what is missing, updates what is there, and is safe to
 * repeat (e.g. a sandbox started twice against the same cluster).
 */
export async function applyManifests(kc: KubeConfig, objects: KubernetesObject[]): Promise<void> {
  const api = KubernetesObjectApi.makeApiClient(kc);
  for (const object of objects) {
    try {
      await api.patch(object, undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply);
    } catch (error) {
      throw failure('applying', object, error);
    }
  }
}

/** A JSON merge patch of an existing object (e.g. an annotation); 404 when it does not exist. */
export async function mergePatchObject(kc: KubeConfig, patch: KubernetesObject): Promise<void> {
  const api = KubernetesObjectApi.makeApiClient(kc);
  try {
    await api.patch(patch, undefined, undefined, FIELD_MANAGER, undefined, PatchStrategy.MergePatch);
  } catch (error) {
    throw failure('patching', patch, error);
  }
}

/** Whether a CRD exists and is served. */
export async function crdEstablished(kc: KubeConfig, name: string): Promise<boolean> {
  try {
    const crd = await kc.makeApiClient(ApiextensionsV1Api).readCustomResourceDefinition({ name });
    return crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') ?? false;
  } catch (error) {
    if (error instanceof ApiException && error.code === 404) return false;
    throw error;
  }
}

export interface InstallCrdsOptions {
  timeoutMs?: number;
  /** Server-side apply instead of create: updates CRDs that already exist (a real cluster, a second run). */
  apply?: boolean;
}

/**
 * Creates (or applies) each CRD and waits until all are Established, so objects of those kinds can be
 * created right away. A rejection, e.g. a CEL rule that does not compile, throws with the server's message.
 * The second argument may be a timeout in ms, as the tests have always called it.
 */
export async function installCrds(
  kc: KubeConfig,
  files: Array<URL | string>,
  options: InstallCrdsOptions | number = {},
): Promise<string[]> {
  const { timeoutMs = 30_000, apply = false } = typeof options === 'number' ? { timeoutMs: options } : options;
  const crds = readCrds(files);
  const names = crds.map((crd) => crd.metadata?.name ?? '');
  for (const [i, crd] of crds.entries()) {
    try {
      await (apply ? applyManifests(kc, [crd]) : createManifests(kc, [crd]));
    } catch (error) {
      throw new Error(`CRD ${names[i]} was rejected (${messageOf((error as Error).cause ?? error)})`, {
        cause: error,
      });
    }
  }
  const api = kc.makeApiClient(ApiextensionsV1Api);
  const deadline = Date.now() + timeoutMs;
  for (const name of names) {
    for (;;) {
      const crd = await api.readCustomResourceDefinition({ name });
      const established = crd.status?.conditions?.find((c) => c.type === 'Established');
      if (established?.status === 'True') break;
      if (Date.now() > deadline) throw new Error(`CRD ${name} not Established: ${JSON.stringify(crd.status)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  return names;
}
