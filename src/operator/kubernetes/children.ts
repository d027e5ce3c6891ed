/**
 * The child ports (Secret, CNPG Cluster, Pooler, ConfigMap): reads projected onto the domain shapes,
 * writes by server-side apply, owner references by conditional merge patch.
 */
import { isDeepStrictEqual } from 'node:util';
import { API_VERSION, type OwnerReference } from '../api/schema.ts';
import { PortError } from '../core/errors.ts';
import type {
  AppliedChildPort,
  BackupPorts,
  ChildPort,
  CnpgClusterPort,
  ConfigMapPort,
  PoolerPort,
  SecretPort,
  Seen,
} from '../core/ports.ts';
import type { SecretTemplate } from '../domain/effects.ts';
import {
  type CnpgCluster,
  type ConfigMap,
  type KubeObject,
  type ObjectRef,
  type Pooler,
  type PoolerView,
  refOf,
  type SecretView,
} from '../domain/objects.ts';
import { ADOPT_ANNOTATION, FIELD_MANAGER } from '../domain/vocabulary.ts';
import { call, getOrUndefined, unlessGone } from './errors.ts';
import {
  applyBodyOf,
  customObjectOf,
  metadataOf,
  type ObjectClient,
  ONLY_IF_ABSENT,
  objectClient,
  type RawObject,
} from './objects.ts';
import { generatePassword } from './password.ts';
import { BACKUP_RESOURCES, RESOURCES, resourcePath } from './resources.ts';
import type { RestClient } from './rest.ts';

export const ROLES_FIELD_MANAGER = `${FIELD_MANAGER}-roles`;

/** What a release merges into the object's annotations: the hand-over to a future cluster of the name. */
const HANDED_OVER = { [ADOPT_ANNOTATION]: 'true' };

const describe = (verb: string, ref: ObjectRef) => `${verb} ${ref.kind} ${ref.namespace}/${ref.name}`;
const controllerOf = (owners: OwnerReference[] | undefined) => (owners ?? []).find((o) => o.controller);
const isPostgresCluster = (owner: OwnerReference | undefined) =>
  owner?.kind === 'PostgresCluster' && owner.apiVersion === API_VERSION;

/** Shared by the PostgresDatabase's child ports too (database-children.ts). */
export class KubernetesChildPort<T extends KubeObject> implements ChildPort<T> {
  constructor(
    protected readonly client: ObjectClient,
    protected readonly project: (raw: RawObject) => T,
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

  async setOwner(ref: ObjectRef, owner: OwnerReference): Promise<T | undefined> {
    return this.changeOwners(ref, (owners) => [...owners.filter((o) => o.uid !== owner.uid), owner]);
  }

  /**
   * Also hands the object over (`pgfsm.io/adopt: "true"`, in the same patch): what a Retain deletion releases
   * is what a new cluster of the name may take back, and only the annotation says so (vocabulary.ts, `mayAdopt`).
   */
  async releaseOwner(ref: ObjectRef, ownerUid: string): Promise<T | undefined> {
    return this.changeOwners(ref, (owners) => owners.filter((o) => o.uid !== ownerUid), HANDED_OVER);
  }

  /**
   * Read, change, write back with the resourceVersion that was read: the merge patch replaces the whole
   * list, so a concurrent change to it must fail (409) rather than be overwritten. Gone means no owners.
   * Answers the object as stored after it (as read, when nothing needed to change; undefined when gone).
   */
  private async changeOwners(
    ref: ObjectRef,
    change: (owners: OwnerReference[]) => OwnerReference[],
    annotations?: Record<string, string>,
  ): Promise<T | undefined> {
    const live = await this.get(ref);
    if (!live) return undefined;
    const owners = live.metadata.ownerReferences ?? [];
    const ownerReferences = change(owners);
    if (isDeepStrictEqual(owners, ownerReferences)) return live;
    const metadata = { resourceVersion: live.metadata.resourceVersion, ownerReferences };
    const body = { metadata: annotations ? { ...metadata, annotations } : metadata };
    const stored = await unlessGone(this.context('update owners of', ref), () =>
      this.client.mergePatch(ref, body, { answer: true }),
    );
    return stored ? this.project(stored) : undefined;
  }

  /**
   * Server-side apply as `fieldManager`, conditional on what the pass saw (`seen`, ports.ts), so that the
   * decision below cannot be overtaken by a concurrent write (that fails with 409 instead):
   * - seen: on its resourceVersion;
   * - seen absent: on its still being absent. The same request creates the object, or fails as a conflict
   *   if it exists by now ({@link ONLY_IF_ABSENT}), so an object the view missed is never applied over or
   *   adopted, and creating needs no read first. It is created by apply, not by POST, so that `fieldManager`
   *   owns its fields as an applier from the start: a create records its fields under an `Update` entry of
   *   the same manager, which a later apply that drops a field leaves owning it, so the field would stay;
   * - an apply that never creates (no owner: the managed roles) handed no sighting reads the object first.
   *
   * `force` takes over fields that another manager changed (drift a human made with kubectl edit moves the
   * field to them), so it is used only where pgfsm is the rightful owner:
   * - the object carries our controller reference, and the live object is absent, orphaned, or controlled
   *   by that same owner (the core's adoption rule). A live object controlled by anyone else is refused
   *   here as a conflict: the API server would not stop us, since every PostgresCluster applies as the same
   *   field manager and a forced apply would silently swap the controller reference;
   * - the object carries no owner (the managed roles) and the live object is controlled by a PostgresCluster.
   * Otherwise the apply does not force, so another manager's fields surface as a conflict (409) rather than
   * being overwritten; and such an apply never creates the object.
   */
  protected async applyAs(
    object: KubeObject,
    fieldManager: string,
    seen?: Seen,
    answer = false,
  ): Promise<RawObject | undefined> {
    const ref = refOf(object);
    const desired = controllerOf(object.metadata.ownerReferences);
    const live = seen ?? (desired ? undefined : await this.get(ref));
    const current = controllerOf(live?.metadata.ownerReferences);
    if (desired && current && current.uid !== desired.uid) {
      throw new PortError('conflict', `${describe('apply', ref)}: controlled by ${current.kind}/${current.name}`);
    }
    if (!desired && !live) throw new PortError('notFound', `${describe('apply', ref)}: not found`);
    const force = desired !== undefined || isPostgresCluster(current);
    const resourceVersion = live ? live.metadata.resourceVersion : ONLY_IF_ABSENT;
    const body = applyBodyOf(object as KubeObject & Record<string, unknown>, resourceVersion);
    // A 409 of a create-only apply means the object exists: the message says the write was one.
    const what = `${describe('apply', ref)}${live ? '' : ' (only if absent)'}`;
    return call({ what, sensitive: this.client.sensitive }, () =>
      this.client.apply(ref, body, { fieldManager, force, answer }),
    );
  }
}

export const secretViewOf = (raw: RawObject): SecretView => {
  const { data, stringData } = raw as { data?: object; stringData?: object };
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: metadataOf(raw.metadata),
    keys: Object.keys({ ...(data ?? {}), ...(stringData ?? {}) }).sort(),
  };
};

const configMapOf = (raw: RawObject): ConfigMap => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: metadataOf(raw.metadata),
  ...(raw.data ? { data: { ...(raw.data as Record<string, string>) } } : {}),
});

export class KubernetesSecretPort extends KubernetesChildPort<SecretView> implements SecretPort {
  constructor(private readonly rest: RestClient) {
    super(objectClient(rest, RESOURCES.secrets), secretViewOf);
  }

  /** Created, not applied: the password is generated here once and must never be regenerated by a re-apply. */
  async create(template: SecretTemplate): Promise<SecretView> {
    const { namespace, name } = template.ref;
    const body = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name, namespace, labels: template.labels, ownerReferences: [template.owner] },
      type: 'kubernetes.io/basic-auth',
      data: {
        username: Buffer.from(template.username).toString('base64'),
        password: Buffer.from(generatePassword()).toString('base64'),
      },
    };
    // The response echoes the data: only its metadata and key names are kept.
    return call(this.context('create', template.ref), async () =>
      secretViewOf(
        await this.rest.request<RawObject>({
          method: 'POST',
          path: resourcePath(RESOURCES.secrets, { namespace }),
          query: { fieldManager: FIELD_MANAGER },
          body,
        }),
      ),
    );
  }
}

export class KubernetesCnpgClusterPort extends KubernetesChildPort<CnpgCluster> implements CnpgClusterPort {
  constructor(client: ObjectClient) {
    super(client, customObjectOf<CnpgCluster>);
  }

  /**
   * Two field managers, so that the spec and the roles are applied apart without dropping each other.
   * Answers the Cluster as stored (the pass reads its own write until the watch delivers it).
   */
  async apply(object: CnpgCluster, part: 'cluster' | 'managedRoles', seen?: Seen): Promise<CnpgCluster | undefined> {
    const stored = await this.applyAs(object, part === 'cluster' ? FIELD_MANAGER : ROLES_FIELD_MANAGER, seen, true);
    return stored && this.project(stored);
  }
}

export class KubernetesPoolerPort extends KubernetesChildPort<Pooler> implements PoolerPort {
  private readonly deployments: ObjectClient;

  constructor(client: ObjectClient, rest: RestClient) {
    super(client, customObjectOf<Pooler>);
    this.deployments = objectClient(rest, RESOURCES.deployments);
  }

  /** Answers the Pooler as stored (the pass reads its own write until the watch delivers it). */
  async apply(object: Pooler, seen?: Seen): Promise<Pooler | undefined> {
    const stored = await this.applyAs(object, FIELD_MANAGER, seen, true);
    return stored && this.project(stored);
  }

  /** CNPG runs each pooler as a Deployment of the same name; its ready replicas are the readiness signal. */
  async view(ref: ObjectRef): Promise<PoolerView | undefined> {
    const pooler = await this.get(ref);
    if (!pooler) return undefined;
    const deployment = await getOrUndefined({ what: `get Deployment ${ref.namespace}/${ref.name}` }, () =>
      this.deployments.read(ref),
    );
    const readyReplicas = (deployment?.status as { readyReplicas?: unknown } | undefined)?.readyReplicas;
    return { pooler, readyReplicas: typeof readyReplicas === 'number' ? readyReplicas : 0 };
  }
}

export class KubernetesConfigMapPort extends KubernetesChildPort<ConfigMap> implements ConfigMapPort {
  constructor(client: ObjectClient) {
    super(client, configMapOf);
  }

  /** Answers the ConfigMap as stored (the pass reads its own write until the watch delivers it). */
  async apply(object: ConfigMap, seen?: Seen): Promise<ConfigMap> {
    const stored = await this.applyAs(object, FIELD_MANAGER, seen, true);
    if (!stored) throw new PortError('other', `${describe('apply', refOf(object))}: the API server answered no object`);
    return configMapOf(stored);
  }
}

/** A custom object applied whole by pgfsm's field manager: the backup kinds (issue 36). */
class KubernetesAppliedPort<T extends KubeObject> extends KubernetesChildPort<T> implements AppliedChildPort<T> {
  /** @param installs what a user installs for the API server to serve this kind, for a 404's message. */
  constructor(
    client: ObjectClient,
    private readonly installs: string,
  ) {
    super(client, customObjectOf<T>);
  }

  /**
   * These kinds are not watched (resources.ts), so no pass hands a sighting: the live object is read first, and
   * the apply is conditional on it as for the others (absent: create only). A server-side apply creates what is
   * absent, so its 404 means the API server does not serve the kind: the message says what to install, since
   * the API server's own words ("the server could not find the requested resource") do not.
   */
  async apply(object: T, seen?: Seen): Promise<T | undefined> {
    const live = seen ?? (await this.get(refOf(object)));
    try {
      const stored = await this.applyAs(object, FIELD_MANAGER, live, true);
      return stored && this.project(stored);
    } catch (error) {
      if (!(error instanceof PortError) || error.errorClass !== 'notFound' || live) throw error;
      throw new PortError(
        'notFound',
        `${describe('apply', refOf(object))}: the API server does not serve ${object.apiVersion} ${object.kind}; ` +
          `install ${this.installs}`,
      );
    }
  }
}

const BARMAN_CLOUD_PLUGIN = 'the Barman Cloud Plugin (v0.15.0) beside CloudNativePG';
const CLOUDNATIVE_PG = 'CloudNativePG with its CRDs';

export const kubernetesBackupPorts = (rest: RestClient): BackupPorts => ({
  objectStores: new KubernetesAppliedPort(objectClient(rest, BACKUP_RESOURCES.objectStores), BARMAN_CLOUD_PLUGIN),
  scheduledBackups: new KubernetesAppliedPort(objectClient(rest, BACKUP_RESOURCES.scheduledBackups), CLOUDNATIVE_PG),
  backups: new KubernetesAppliedPort(objectClient(rest, BACKUP_RESOURCES.backups), CLOUDNATIVE_PG),
});
