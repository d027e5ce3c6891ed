/** domain/backup/credentials.ts: a store without credentials in the cluster's namespace is named, by class field. */
import { describe, expect, it } from 'vitest';
import { storeSecretsProblem } from '../../../src/operator/domain/backup/credentials.ts';
import type { SecretView } from '../../../src/operator/domain/objects.ts';
import { backupClass, backupWorld, mergedOf } from './support.ts';

const secret = (name: string, keys: string[]): SecretView => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name, namespace: 'team-a' },
  keys,
});

function problem(secrets: Parameters<typeof storeSecretsProblem>[3], ca = false) {
  const clusterClass = backupClass(
    ca
      ? {
          objectStore: {
            destinationPath: 's3://pg-backups/prod',
            endpointCA: { secretName: 'store-ca', key: 'ca.crt' },
            credentials: { secretName: 's3-creds', regionKey: 'REGION' },
          },
        }
      : {},
  );
  const store = mergedOf(backupWorld({}, { clusterClass })).backup?.store;
  if (!store) throw new Error('no store');
  return storeSecretsProblem(clusterClass, 'team-a', store, secrets);
}

describe("the store's Secrets in the cluster's namespace", () => {
  it('are fine with both keys there', () => {
    expect(problem({ credentials: secret('s3-creds', ['ACCESS_KEY_ID', 'ACCESS_SECRET_KEY']) })).toBeUndefined();
  });

  it('a store without credentials: the Secret is missing', () => {
    expect(problem({})).toEqual({
      field: 'class standard spec.backup.objectStore.credentials.secretName',
      message: expect.stringMatching(
        /^class standard spec\.backup\.objectStore\.credentials\.secretName: Secret s3-creds not found in namespace team-a/,
      ),
    });
  });

  it.each([
    [['ACCESS_SECRET_KEY'], 'credentials.accessKeyIdKey', 'ACCESS_KEY_ID'],
    [['ACCESS_KEY_ID'], 'credentials.secretAccessKeyKey', 'ACCESS_SECRET_KEY'],
  ])('a credentials Secret with keys %j lacks %s', (keys, path, key) => {
    expect(problem({ credentials: secret('s3-creds', keys) })).toMatchObject({
      field: `class standard spec.backup.objectStore.${path}`,
      message: expect.stringContaining(`has no key ${key}`),
    });
  });

  it('the region key and the CA, when the class names them', () => {
    const both = secret('s3-creds', ['ACCESS_KEY_ID', 'ACCESS_SECRET_KEY']);
    expect(problem({ credentials: both }, true)?.field).toBe(
      'class standard spec.backup.objectStore.credentials.regionKey',
    );
    const withRegion = secret('s3-creds', ['ACCESS_KEY_ID', 'ACCESS_SECRET_KEY', 'REGION']);
    expect(problem({ credentials: withRegion }, true)?.field).toBe(
      'class standard spec.backup.objectStore.endpointCA.secretName',
    );
    expect(problem({ credentials: withRegion, endpointCA: secret('store-ca', ['tls.crt']) }, true)?.field).toBe(
      'class standard spec.backup.objectStore.endpointCA.key',
    );
    expect(problem({ credentials: withRegion, endpointCA: secret('store-ca', ['ca.crt']) }, true)).toBeUndefined();
  });
});
