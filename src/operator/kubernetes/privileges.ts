/**
 * The privileges port: the grants of postgres/privileges.ts, run as the cluster's superuser. Its credentials
 * are read from the superuser Secret straight from the API (never a cache) and go nowhere but the connection.
 */

import type { PrivilegesPort } from '../core/database/ports.ts';
import { PortError } from '../core/errors.ts';
import type { ClusterKey } from '../core/ports.ts';
import type { PostgresPresence } from '../domain/database/observation.ts';
import { childNames, SUPERUSER_NAME } from '../domain/vocabulary.ts';
import { inspectPresence } from '../postgres/presence.ts';
import { applyPrivileges, existingRoles, type PrivilegePlan } from '../postgres/privileges.ts';
import { getOrUndefined } from './errors.ts';
import { type ObjectClient, objectClient } from './objects.ts';
import { RESOURCES } from './resources.ts';
import type { RestClient } from './rest.ts';

/** Where a cluster's primary takes connections. */
export type HostOf = (cluster: ClusterKey) => Promise<{ host: string; port: number }>;

export const POSTGRES_PORT = 5432;

/** CloudNativePG's read-write Service, which follows the primary: resolvable from any Pod of the cluster. */
export const readWriteService: HostOf = async (cluster) => ({
  host: `${childNames(cluster.name).cnpgCluster}-rw.${cluster.namespace}.svc`,
  port: POSTGRES_PORT,
});

export interface KubernetesPrivilegesOptions {
  /** Default {@link readWriteService}; tests and out-of-cluster runs point elsewhere (a port-forward). */
  hostOf?: HostOf;
}

const decoded = (value: unknown) => (typeof value === 'string' ? Buffer.from(value, 'base64').toString() : undefined);

export class KubernetesPrivilegesPort implements PrivilegesPort {
  private readonly secrets: ObjectClient;
  private readonly hostOf: HostOf;

  constructor(rest: RestClient, options: KubernetesPrivilegesOptions = {}) {
    this.secrets = objectClient(rest, RESOURCES.secrets);
    this.hostOf = options.hostOf ?? readWriteService;
  }

  /** Throws a PortError when the Secret cannot be read, a PrivilegeError when the grants fail (applyPrivileges). */
  async grant(cluster: ClusterKey, plan: PrivilegePlan): Promise<void> {
    await applyPrivileges(await this.superuser(cluster), plan);
  }

  async existingRoles(cluster: ClusterKey, roles: string[]): Promise<string[]> {
    return existingRoles(await this.superuser(cluster), roles);
  }

  async inspect(cluster: ClusterKey, plan: PrivilegePlan): Promise<PostgresPresence> {
    return inspectPresence(await this.superuser(cluster), plan);
  }

  /** Where and as whom to connect: the superuser Secret read from the API, the host from `hostOf`. */
  private async superuser(cluster: ClusterKey) {
    const ref = {
      apiVersion: 'v1',
      kind: 'Secret',
      namespace: cluster.namespace,
      name: childNames(cluster.name).secret,
    };
    const secret = `Secret ${ref.namespace}/${ref.name}`;
    const raw = await getOrUndefined({ what: `get superuser ${secret}`, sensitive: true }, () =>
      this.secrets.read(ref),
    );
    if (!raw) throw new PortError('notFound', `superuser ${secret} not found`);
    const data = (raw.data ?? {}) as Record<string, unknown>;
    const password = decoded(data.password);
    if (!password) throw new PortError('other', `superuser ${secret} has no password`);
    const { host, port } = await this.hostOf(cluster);
    return { host, port, user: decoded(data.username) || SUPERUSER_NAME, password };
  }
}
