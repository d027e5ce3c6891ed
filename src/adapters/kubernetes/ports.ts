/**
 * The ports over a real Kubernetes API (client-node 1.4.0), with the semantics of the in-memory adapter:
 * children are written by server-side apply, the PostgresCluster by conditional merge patches, and a
 * Secret is only ever seen as its key names.
 */
import { isDeepStrictEqual } from 'node:util';
import { AppsV1Api, CoreV1Api, CustomObjectsApi, type KubeConfig, type V1Secret } from '@kubernetes/client-node';
import {
  API_VERSION,
  GROUP,
  type OwnerReference,
  type PostgresCluster,
  type PostgresClusterClass,
  type PostgresClusterStatus,
  VERSION,
} from '../../api/schema.ts';
import type {
  ChildPort,
  ClassPort,
  Clock,
  CnpgClusterPort,
  ConfigMapPort,
  PoolerPort,
  PostgresClusterPort,
  Ports,
  SecretPort,
} from '../../core/ports.ts';
import { PortError } from '../../core/errors.ts';
import type { SecretTemplate } from '../../domain/effects.ts';
import { FIELD_MANAGER } from '../../domain/names.ts';
import {
  CNPG_API_VERSION,
  type CnpgCluster,
  type ConfigMap,
  type KubeObject,
  type ObjectRef,
  type Pooler,
  type PoolerView,
  refOf,
  type SecretView,
} from '../../domain/objects.ts';
import { generatePassword } from '../password.ts';
import { call, getOrUndefined, unlessGone } from './errors.ts';
import { KubernetesEventSink } from './events.ts';
import {
  applyBodyOf,
  configMapClient,
  customObjectClient,
  customObjectOf,
  metadataOf,
  mergePatch,
  type ObjectClient,
  type RawObject,
  secretClient,
} from './objects.ts';

export interface KubernetesPortsOptions {
  clock?: Clock;
  /** `reportingController` of the Events; default `pgfsm`. */
  reportingController?: string;
  /** `reportingInstance` of the Events; default `<controller>-<hostname>`. */
  reportingInstance?: string;
}

const CNPG_GROUP = CNPG_API_VERSION.split('/')[0] ?? 'postgresql.cnpg.io';
const CNPG_VERSION = CNPG_API_VERSION.split('/')[1] ?? 'v1';
const ROLES_FIELD_MANAGER = `${FIELD_MANAGER}-roles`;

const describe = (verb: string, ref: ObjectRef) => `${verb} ${ref.kind} ${ref.namespace}/${ref.name}`;

/** True when a PostgresCluster (so pgfsm) is, or is being made, the object's controller. */
const controlledByPgfsm = (owners: OwnerReference[] | undefined) =>
  (owners ?? []).some((o) => o.controller && o.kind === 'PostgresCluster' && o.apiVersion === API_VERSION);

class KubernetesChildPort<T extends KubeObject> implements ChildPort<T> {
  constructor(
    protected readonly client: ObjectClient,
    private readonly project: (raw: RawObject) => T,
  ) {}

  protected context(verb: string, ref: ObjectRef) {
    return { what: describe(verb, ref), sensitive: this.client.sensitive };
  }

  async get(ref: ObjectRef): Promise<T | undefined> {
    const raw = await getOrUndefined(this.context('get', ref), () => this.client.read(ref));
    return raw === undefined ? undefined : this.project(raw);
  }

  /** Already gone counts as deleted. */
  async delete(ref: ObjectRef): Promise<void> {
    await unlessGone(this.context('delete', ref), () => this.client.remove(ref));
  }

  async setOwner(ref: ObjectRef, owner: OwnerReference): Promise<void> {
    await this.changeOwners(ref, (owners) => [...owners.filter((o) => o.uid !== owner.uid), owner]);
  }

  async releaseOwner(ref: ObjectRef, ownerUid: string): Promise<void> {
    await this.changeOwners(ref, (owners) => owners.filter((o) => o.uid !== ownerUid));
  }

  /**
   * Read, change, write back with the resourceVersion that was read: the merge patch replaces the whole
   * list, so a concurrent change to it must fail (409) rather than be overwritten.
   */
  private async changeOwners(ref: ObjectRef, change: (owners: OwnerReference[]) => OwnerReference[]) {
    const live = await this.get(ref);
    if (!live) return;
    const owners = live.metadata.ownerReferences ?? [];
    const ownerReferences = change(owners);
    if (isDeepStrictEqual(owners, ownerReferences)) return;
    const body = { metadata: { resourceVersion: live.metadata.resourceVersion, ownerReferences } };
    await unlessGone(this.context('update owners of', ref), () => this.client.mergePatch(ref, body));
  }

  /**
   * Server-side apply as `fieldManager`. We force, taking over fields another manager changed (drift),
   * only where pgfsm is the rightful owner: the object carries our controller reference (the core applies
   * those only to objects that are ours or orphaned, and the API server refuses a second controller, so a
   * foreign-controlled object cannot be taken over), or the live object is already controlled by a
   * PostgresCluster. Otherwise the apply does not force, and another manager's fields surface as a
   * conflict instead of being overwritten; such an apply also never creates the object.
   */
  protected async applyAs(object: KubeObject, fieldManager: string): Promise<void> {
    const ref = refOf(object);
    let force = controlledByPgfsm(object.metadata.ownerReferences);
    if (!force) {
      const live = await this.get(ref);
      if (!live) throw new PortError('notFound', `${describe('apply', ref)}: not found`);
      force = controlledByPgfsm(live.metadata.ownerReferences);
    }
    const body = applyBodyOf(object as KubeObject & Record<string, unknown>);
    await call(this.context('apply', ref), () => this.client.apply(ref, body, { fieldManager, force }));
  }
}

const cnpgKind = (kind: string, plural: string) => ({ group: CNPG_GROUP, version: CNPG_VERSION, plural, kind });

const secretViewOf = (raw: RawObject): SecretView => {
  const secret = raw as V1Secret;
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: metadataOf(raw.metadata),
    keys: Object.keys({ ...(secret.data ?? {}), ...(secret.stringData ?? {}) }).sort(),
  };
};

const configMapOf = (raw: RawObject): ConfigMap => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: metadataOf(raw.metadata),
  ...(raw.data ? { data: { ...(raw.data as Record<string, string>) } } : {}),
});

class SecretPortImpl extends KubernetesChildPort<SecretView> implements SecretPort {
  constructor(private readonly core: CoreV1Api) {
    super(secretClient(core), secretViewOf);
  }

  /** Created, not applied: the password is generated here once and must never be regenerated by a re-apply. */
  async create(template: SecretTemplate): Promise<void> {
    const { namespace, name } = template.ref;
    const body: V1Secret = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name, namespace, labels: template.labels, ownerReferences: [template.owner] },
      type: 'kubernetes.io/basic-auth',
      data: {
        username: Buffer.from(template.username).toString('base64'),
        password: Buffer.from(generatePassword()).toString('base64'),
      },
    };
    // The response echoes the data: awaited and dropped.
    await call(this.context('create', template.ref), async () => {
      await this.core.createNamespacedSecret({ namespace, body, fieldManager: FIELD_MANAGER });
    });
  }
}

class CnpgClusterPortImpl extends KubernetesChildPort<CnpgCluster> implements CnpgClusterPort {
  /** Two field managers, so that the spec and the roles are applied apart without dropping each other. */
  async apply(object: CnpgCluster, part: 'cluster' | 'managedRoles'): Promise<void> {
    await this.applyAs(object, part === 'cluster' ? FIELD_MANAGER : ROLES_FIELD_MANAGER);
  }
}

class PoolerPortImpl extends KubernetesChildPort<Pooler> implements PoolerPort {
  constructor(
    client: ObjectClient,
    private readonly apps: AppsV1Api,
  ) {
    super(client, customObjectOf<Pooler>);
  }

  async apply(object: Pooler): Promise<void> {
    await this.applyAs(object, FIELD_MANAGER);
  }

  /** CNPG runs each pooler as a Deployment of the same name; its ready replicas are the readiness signal. */
  async view(ref: ObjectRef): Promise<PoolerView | undefined> {
    const pooler = await this.get(ref);
    if (!pooler) return undefined;
    const at = { namespace: ref.namespace, name: ref.name };
    const deployment = await getOrUndefined({ what: `get Deployment ${ref.namespace}/${ref.name}` }, () =>
      this.apps.readNamespacedDeployment(at),
    );
    return { pooler, readyReplicas: deployment?.status?.readyReplicas ?? 0 };
  }
}

class ConfigMapPortImpl extends KubernetesChildPort<ConfigMap> implements ConfigMapPort {
  async apply(object: ConfigMap): Promise<void> {
    await this.applyAs(object, FIELD_MANAGER);
  }
}

/**
 * The changes that turn `previous` into `next` as a JSON merge patch: keys that disappeared become
 * `null`, so the stored status ends up equal to `next` (a plain `{status: next}` would leave them).
 * Lists are replaced whole, which is what the conditions list needs.
 */
export function mergePatchFrom(previous: unknown, next: unknown): unknown {
  const isMap = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (!isMap(previous) || !isMap(next)) return next;
  const patch: Record<string, unknown> = {};
  for (const key of Object.keys(previous)) if (!(key in next) || next[key] === undefined) patch[key] = null;
  for (const [key, value] of Object.entries(next)) {
    if (value !== undefined) patch[key] = mergePatchFrom(previous[key], value);
  }
  return patch;
}

function postgresClusterPort(custom: CustomObjectsApi): PostgresClusterPort {
  const type = { group: GROUP, version: VERSION, plural: 'postgresclusters' };
  const at = (c: PostgresCluster) => ({ ...type, namespace: c.metadata.namespace, name: c.metadata.name });
  const what = (verb: string, c: PostgresCluster) => `${verb} PostgresCluster ${c.metadata.namespace}/${c.metadata.name}`;

  /**
   * Finalizers are written with the resourceVersion of the object the core decided on: the merge patch
   * replaces the whole list, so a stale write must fail (409) instead of dropping someone else's finalizer.
   * A cluster that is already gone needs no finalizer change.
   */
  const writeFinalizers = async (cluster: PostgresCluster, finalizers: string[]) => {
    const body = { metadata: { resourceVersion: cluster.metadata.resourceVersion, finalizers } };
    await unlessGone({ what: what('update finalizers of', cluster) }, () =>
      custom.patchNamespacedCustomObject({ ...at(cluster), body }, mergePatch),
    );
  };

  return {
    async get(key) {
      const raw = await getOrUndefined({ what: `get PostgresCluster ${key.namespace}/${key.name}` }, () =>
        custom.getNamespacedCustomObject({ ...type, ...key }),
      );
      return raw === undefined ? undefined : customObjectOf<PostgresCluster>(raw as RawObject);
    },
    async addFinalizer(cluster, finalizer) {
      const finalizers = cluster.metadata.finalizers ?? [];
      if (!finalizers.includes(finalizer)) await writeFinalizers(cluster, [...finalizers, finalizer]);
    },
    async removeFinalizer(cluster, finalizer) {
      const finalizers = cluster.metadata.finalizers ?? [];
      if (finalizers.includes(finalizer)) await writeFinalizers(cluster, finalizers.filter((f) => f !== finalizer));
    },
    async writeStatus(cluster, status: PostgresClusterStatus) {
      const body = { status: mergePatchFrom(cluster.status, status) };
      await call({ what: what('write status of', cluster) }, () =>
        custom.patchNamespacedCustomObjectStatus({ ...at(cluster), body }, mergePatch),
      );
    },
  };
}

function classPort(custom: CustomObjectsApi): ClassPort {
  return {
    async get(name) {
      const raw = await getOrUndefined({ what: `get PostgresClusterClass ${name}` }, () =>
        custom.getClusterCustomObject({ group: GROUP, version: VERSION, plural: 'postgresclusterclasses', name }),
      );
      return raw === undefined ? undefined : customObjectOf<PostgresClusterClass>(raw as RawObject);
    },
  };
}

const systemClock: Clock = { now: () => Date.now() };

export function kubernetesPorts(kc: KubeConfig, options: KubernetesPortsOptions = {}): Ports {
  const clock = options.clock ?? systemClock;
  const custom = kc.makeApiClient(CustomObjectsApi);
  const core = kc.makeApiClient(CoreV1Api);
  const apps = kc.makeApiClient(AppsV1Api);
  return {
    clusters: postgresClusterPort(custom),
    classes: classPort(custom),
    secrets: new SecretPortImpl(core),
    cnpgClusters: new CnpgClusterPortImpl(
      customObjectClient(custom, cnpgKind('Cluster', 'clusters')),
      customObjectOf<CnpgCluster>,
    ),
    poolers: new PoolerPortImpl(customObjectClient(custom, cnpgKind('Pooler', 'poolers')), apps),
    configMaps: new ConfigMapPortImpl(configMapClient(core), configMapOf),
    events: new KubernetesEventSink(kc, {
      clock,
      ...(options.reportingController ? { reportingController: options.reportingController } : {}),
      ...(options.reportingInstance ? { reportingInstance: options.reportingInstance } : {}),
    }),
    clock,
  };
}
