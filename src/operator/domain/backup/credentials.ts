/**
 * Whether the Secrets a class's store names are there, in the cluster's namespace, with the keys it names. The
 * plugin reads them only when it archives or backs up, and says so only in its sidecar's log; pgfsm says it first,
 * naming the class's field. Secrets reach the core as key names only (domain/objects.ts: SecretView).
 */
import type { PostgresClusterClass } from '../../api/schema.ts';
import { classField } from '../field-names.ts';
import type { SecretView } from '../objects.ts';
import type { StoreConfig } from './policy.ts';

export interface StoreSecrets {
  credentials?: SecretView;
  endpointCA?: SecretView;
}

export interface StoreProblem {
  field: string;
  message: string;
}

/** The first thing missing for the store to be usable from this namespace, or undefined. */
export function storeSecretsProblem(
  clusterClass: PostgresClusterClass,
  namespace: string,
  store: StoreConfig,
  secrets: StoreSecrets,
): StoreProblem | undefined {
  const at = (path: string) => classField(clusterClass, `backup.objectStore.${path}`);
  const problem = (path: string, message: string) => ({ field: at(path), message: `${at(path)}: ${message}` });
  const { credentials } = store;
  if (!secrets.credentials) {
    return problem(
      'credentials.secretName',
      `Secret ${credentials.secretName} not found in namespace ${namespace}: each namespace whose clusters are backed up needs its own (pgfsm never copies it)`,
    );
  }
  const keys = new Set(secrets.credentials.keys);
  const wanted = [
    ['credentials.accessKeyIdKey', credentials.accessKeyIdKey],
    ['credentials.secretAccessKeyKey', credentials.secretAccessKeyKey],
    ...(credentials.regionKey !== undefined ? [['credentials.regionKey', credentials.regionKey] as const] : []),
  ] as const;
  for (const [path, key] of wanted) {
    if (!keys.has(key))
      return problem(path, `Secret ${credentials.secretName} in namespace ${namespace} has no key ${key}`);
  }
  const ca = store.endpointCA;
  if (ca && !secrets.endpointCA) {
    return problem('endpointCA.secretName', `Secret ${ca.secretName} not found in namespace ${namespace}`);
  }
  if (ca && !secrets.endpointCA?.keys.includes(ca.key)) {
    return problem('endpointCA.key', `Secret ${ca.secretName} in namespace ${namespace} has no key ${ca.key}`);
  }
  return undefined;
}
