/** The superuser Secret: created once with a generated password, adopted when retained, never rewritten. */
import { type Effect, normal } from '../effects.ts';
import type { ObjectRef } from '../objects.ts';
import type { Observation } from '../observation.ts';
import { type Health, health } from '../verdict.ts';
import {
  childLabels,
  childNames,
  describeOwner,
  ownerReferenceTo,
  ownershipOf,
  PASSWORD_KEY,
  Reason,
  SUPERUSER_NAME,
} from '../vocabulary.ts';

export const secretRef = (observation: Observation): ObjectRef => ({
  apiVersion: 'v1',
  kind: 'Secret',
  namespace: observation.cluster.metadata.namespace,
  name: childNames(observation.cluster.metadata.name).secret,
});

export function checkSecret(observation: Observation): Health {
  const { secret, cluster } = observation;
  const name = secretRef(observation).name;
  if (!secret) return health('Provisioning', Reason.UserSecretPending, `Superuser secret ${name} does not exist yet`);
  const ownership = ownershipOf(secret.metadata.ownerReferences, cluster);
  if (ownership === 'foreign') {
    return health(
      'Failed',
      Reason.SuperUserSecretFailed,
      `Superuser secret ${name} is controlled by ${describeOwner(secret.metadata.ownerReferences)}`,
    );
  }
  if (!secret.keys.includes(PASSWORD_KEY)) {
    return health('Failed', Reason.SuperUserSecretFailed, `Superuser secret ${name} has no key "${PASSWORD_KEY}"`);
  }
  if (ownership === 'orphan') {
    return health('Provisioning', Reason.UserSecretPending, `Adopting the existing superuser secret ${name}`);
  }
  return health('Ready', Reason.SuperUserSecretReady, 'Superuser secret is ready');
}

export function planSecret(observation: Observation): Effect[] {
  const { secret, cluster } = observation;
  const ref = secretRef(observation);
  const owner = ownerReferenceTo(cluster);
  if (!secret) {
    return [
      {
        type: 'createSecret',
        component: 'secret',
        secret: { ref, username: SUPERUSER_NAME, labels: childLabels(cluster.metadata.name), owner },
        event: normal('SecretCreated', 'CreateSecret', `Superuser secret ${ref.name} created`),
      },
    ];
  }
  // A Secret without a password is not taken over: it stays its author's to fix (or delete).
  if (ownershipOf(secret.metadata.ownerReferences, cluster) === 'orphan' && secret.keys.includes(PASSWORD_KEY)) {
    return [
      {
        type: 'setOwner',
        component: 'secret',
        ref,
        owner,
        event: normal('ClusterAdopted', 'AdoptSecret', `Adopted the existing superuser secret ${ref.name}`),
      },
    ];
  }
  return [];
}
