/** The superuser Secret: created once with a generated password, adopted when retained, never rewritten. */
import { normal } from '../effects.ts';
import type { ObjectRef } from '../objects.ts';
import type { Observation } from '../observation.ts';
import { heldByOther, type Judgment, judgment, verdict } from '../verdict.ts';
import {
  childLabels,
  childNames,
  EventReason,
  mayAdopt,
  notAdoptableMessage,
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

/**
 * Missing: create it. Foreign, orphaned and not handed over (`mayAdopt`), or without a password: a person's
 * to fix (a Secret pgfsm did not create may hold a team's own credentials and other keys, and whoever planted
 * it would know the superuser password; one without a password stays its author's to fix, or delete).
 * Orphaned and handed over (by a person, or by the Retain deletion that released it): adopt it. Otherwise ready.
 */
export function judgeSecret(observation: Observation): Judgment {
  const { secret, cluster } = observation;
  const ref = secretRef(observation);
  const owner = ownerReferenceTo(cluster);
  if (!secret) {
    return judgment(
      verdict('Provisioning', Reason.SuperUserSecretPending, `Superuser secret ${ref.name} does not exist yet`),
      {
        type: 'createSecret',
        component: 'secret',
        secret: { ref, username: SUPERUSER_NAME, labels: childLabels(cluster.metadata.name), owner },
        event: normal(EventReason.SuperuserSecretCreated, 'CreateSecret', `Superuser secret ${ref.name} created`),
      },
    );
  }
  const ownership = ownershipOf(secret.metadata.ownerReferences, cluster);
  if (ownership === 'foreign') {
    return judgment(
      heldByOther(Reason.SuperUserSecretFailed, `Superuser secret ${ref.name}`, secret.metadata.ownerReferences),
    );
  }
  if (ownership === 'orphan' && !mayAdopt(secret.metadata)) {
    return judgment(
      verdict(
        'Failed',
        Reason.SecretNotAdoptable,
        notAdoptableMessage(`Superuser secret ${ref.name}`, 'Secret', secret.metadata, cluster),
      ),
    );
  }
  if (!secret.keys.includes(PASSWORD_KEY)) {
    return judgment(
      verdict('Failed', Reason.SuperUserSecretFailed, `Superuser secret ${ref.name} has no key "${PASSWORD_KEY}"`),
    );
  }
  if (ownership === 'orphan') {
    return judgment(
      verdict('Provisioning', Reason.SuperUserSecretPending, `Adopting the existing superuser secret ${ref.name}`),
      {
        type: 'setOwner',
        component: 'secret',
        ref,
        owner,
        event: normal(
          EventReason.SuperuserSecretAdopted,
          'AdoptSecret',
          `Adopted the existing superuser secret ${ref.name}`,
        ),
      },
    );
  }
  return judgment(verdict('Ready', Reason.SuperUserSecretReady, 'Superuser secret is ready'));
}
