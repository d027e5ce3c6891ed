/**
 * The PostgresDatabase's child ports: the CloudNativePG Database and the connection Secrets. Both build on the
 * cluster's child port (children.ts): reads projected onto the domain shapes, writes by server-side apply
 * (`applyAs`: refused over another controller, conditional on the version read, create-only when absent),
 * owner hand-over by conditional merge patch.
 */
import type { CnpgDatabasePort, ConnectionSecretPort } from '../core/database/ports.ts';
import { PortError } from '../core/errors.ts';
import type { ConnectionSecretTemplate } from '../domain/database/effects.ts';
import type { CnpgDatabase, ConnectionSecretView } from '../domain/database/observation.ts';
import { PRIVILEGES_ANNOTATION, PRIVILEGES_FIELD_MANAGER } from '../domain/database/vocabulary.ts';
import { type ObjectRef, refOf } from '../domain/objects.ts';
import { FIELD_MANAGER } from '../domain/vocabulary.ts';
import { KubernetesChildPort, secretViewOf } from './children.ts';
import { call, getOrUndefined } from './errors.ts';
import { customObjectOf, type ObjectClient, objectClient, type RawObject } from './objects.ts';
import { generatePassword } from './password.ts';
import { RESOURCES, resourcePath } from './resources.ts';
import { CONTENT, type RestClient } from './rest.ts';

/** The CNPG Database: the spec under `pgfsm`, the digest of the privileges granted under a manager of its own. */
export class KubernetesCnpgDatabasePort extends KubernetesChildPort<CnpgDatabase> implements CnpgDatabasePort {
  constructor(rest: RestClient) {
    super(objectClient(rest, RESOURCES.cnpgDatabases), customObjectOf<CnpgDatabase>);
  }

  /**
   * Server-side apply as `pgfsm`, forced (our controller reference is on the object). The port is handed no
   * sighting, so the object is read first and the apply is conditional on what was read (applyAs): a Database
   * created meanwhile is not applied over, and one controlled by anyone else is refused as a conflict instead
   * of having its controller reference swapped. The privileges annotation is never sent from here: it
   * belongs to {@link recordPrivileges}' field manager, and sending it would take it over.
   */
  async apply(object: CnpgDatabase): Promise<void> {
    const { [PRIVILEGES_ANNOTATION]: _digest, ...annotations } = object.metadata.annotations ?? {};
    const metadata = { ...object.metadata, annotations: Object.keys(annotations).length ? annotations : undefined };
    await this.applyAs({ ...object, metadata }, FIELD_MANAGER, await this.get(refOf(object)));
  }

  /**
   * Applies the annotation alone, as PRIVILEGES_FIELD_MANAGER (forced: it is ours whoever wrote it last), so
   * neither this nor `apply` removes what the other owns. Only on a Database that exists: an apply would
   * otherwise create one with nothing but the annotation.
   */
  async recordPrivileges(ref: ObjectRef, digest: string): Promise<void> {
    const context = this.context('record privileges on', ref);
    if (!(await this.get(ref))) throw new PortError('notFound', `${context.what}: not found`);
    const body = {
      apiVersion: ref.apiVersion,
      kind: ref.kind,
      metadata: { name: ref.name, namespace: ref.namespace, annotations: { [PRIVILEGES_ANNOTATION]: digest } },
    };
    await call(context, () =>
      this.client.apply(ref, body, { fieldManager: PRIVILEGES_FIELD_MANAGER, force: true, answer: false }),
    );
  }
}

/** The keys of a connection Secret: CloudNativePG's own app Secret's. */
export type ConnectionSecretKey = 'username' | 'password' | 'host' | 'port' | 'dbname' | 'uri' | 'jdbc-uri' | 'pgpass';

/** The keys the core may read the values of: where the Secret points, and as whom. */
const VISIBLE = ['username', 'host', 'port', 'dbname'] as const;

const BASIC_AUTH = 'kubernetes.io/basic-auth';
/** CloudNativePG reloads the role's password when a Secret carrying this label changes. */
const CNPG_RELOAD_LABEL = 'cnpg.io/reload';

/** libpq's password file: `\` and `:` within a field are escaped by a backslash. */
const pgpassField = (value: string) => value.replace(/[\\:]/g, (c) => `\\${c}`);

/**
 * The values of a connection Secret (what `stringData` would say; the port stores them base64 in `data`),
 * as CloudNativePG builds its app Secret: the parts, a URI, a JDBC URL and a `.pgpass` line. The user name,
 * the password and the database are percent-encoded in the URLs.
 */
export function connectionSecretData(
  template: Pick<ConnectionSecretTemplate, 'username' | 'host' | 'port' | 'dbname'>,
  password: string,
): Record<ConnectionSecretKey, string> {
  const { username, host, port, dbname } = template;
  const [user, secret, database] = [username, password, dbname].map(encodeURIComponent);
  return {
    username,
    password,
    host,
    port,
    dbname,
    uri: `postgresql://${user}:${secret}@${host}:${port}/${database}`,
    'jdbc-uri': `jdbc:postgresql://${host}:${port}/${database}?user=${user}&password=${secret}`,
    pgpass: `${[host, port, dbname, username, password].map(pgpassField).join(':')}\n`,
  };
}

const decoded = (value: unknown) => (typeof value === 'string' ? Buffer.from(value, 'base64').toString() : undefined);

/** Key names, and the values of the visible keys only: nothing built from the password leaves here. */
const connectionSecretViewOf = (raw: RawObject): ConnectionSecretView => {
  const data = (raw.data ?? {}) as Record<string, unknown>;
  const values: ConnectionSecretView['values'] = {};
  for (const key of VISIBLE) {
    const value = decoded(data[key]);
    if (value !== undefined) values[key] = value;
  }
  return { ...secretViewOf(raw), values };
};

/**
 * Secrets through the verbs of objects.ts, plus the apply it refuses for Secrets: a connection Secret is
 * applied, its password carried over by the port. The answer echoes the values: when asked for, it goes straight
 * to the port's projection (connectionSecretViewOf), which keeps no password.
 */
function connectionSecretClient(rest: RestClient): ObjectClient {
  return {
    ...objectClient(rest, RESOURCES.secrets),
    apply: (ref, body, { fieldManager, force, answer }) =>
      rest.request<RawObject | undefined>({
        method: 'PATCH',
        path: resourcePath(RESOURCES.secrets, ref),
        query: { fieldManager, force: force || undefined },
        body,
        contentType: CONTENT.apply,
        ignoreAnswer: !answer,
      }),
  };
}

/**
 * The connection Secrets on the child port of children.ts. The password is the only value read from the
 * stored Secret: read here, written back here, and never part of a view, a message or an error (every
 * request is `sensitive`).
 */
class ConnectionSecrets extends KubernetesChildPort<ConnectionSecretView> {
  constructor(rest: RestClient) {
    super(connectionSecretClient(rest), connectionSecretViewOf);
  }

  /**
   * Reads the Secret, then applies the template's keys with its password (a new one when it has none), as
   * `pgfsm`, forced, conditional on the version read (applyAs): a password changed meanwhile is not put
   * back, and a Secret that did not exist is only created, so one made meanwhile by anyone else is a conflict,
   * not overwritten. A Secret's type cannot change: one that is not basic-auth (an Opaque one made by hand)
   * keeps its type; CloudNativePG only reads `username` and `password`. Answers the Secret as stored (its view:
   * the cluster's pass reads it as its role's password Secret before the watch delivers it, cache-reads.ts).
   */
  async apply(template: ConnectionSecretTemplate): Promise<ConnectionSecretView | undefined> {
    const { ref } = template;
    const raw = await getOrUndefined(this.context('get', ref), () => this.client.read(ref));
    const stored = decoded((raw?.data as Record<string, unknown> | undefined)?.password);
    const data = connectionSecretData(template, stored || generatePassword());
    const object = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: ref.name,
        namespace: ref.namespace,
        labels: { ...template.labels, [CNPG_RELOAD_LABEL]: 'true' },
        ownerReferences: [template.owner],
      },
      type: typeof raw?.type === 'string' ? raw.type : BASIC_AUTH,
      data: Object.fromEntries(
        Object.entries(data).map(([key, value]) => [key, Buffer.from(value).toString('base64')]),
      ),
    };
    const answer = await this.applyAs(object, FIELD_MANAGER, raw && this.project(raw), true);
    return answer && this.project(answer);
  }
}

/**
 * The port over {@link ConnectionSecrets}: the same verbs; `apply` and `releaseOwner` answer the Secret as stored
 * (its view, no password), which the driver keeps for the cluster's reads (driver/database-cache-reads.ts).
 */
export class KubernetesConnectionSecretPort implements ConnectionSecretPort {
  private readonly secrets: ConnectionSecrets;

  constructor(rest: RestClient) {
    this.secrets = new ConnectionSecrets(rest);
  }

  get(ref: ObjectRef): Promise<ConnectionSecretView | undefined> {
    return this.secrets.get(ref);
  }

  apply(template: ConnectionSecretTemplate): Promise<ConnectionSecretView | undefined> {
    return this.secrets.apply(template);
  }

  delete(ref: ObjectRef): Promise<void> {
    return this.secrets.delete(ref);
  }

  /** Removes our owner reference and adds `pgfsm.io/adopt: "true"`, in one conditional merge patch (children.ts). */
  releaseOwner(ref: ObjectRef, ownerUid: string): Promise<ConnectionSecretView | undefined> {
    return this.secrets.releaseOwner(ref, ownerUid);
  }
}
