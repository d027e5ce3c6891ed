/**
 * Objects stored before a CRD rule existed, made on a real API server: the CRDs' schemas are switched to "anything
 * goes" for the time of `write`, then put back. The API server never re-validates what it stored, so the objects
 * keep whatever `write` gave them, as objects written under an older, looser CRD do.
 */
import { ApiextensionsV1Api, type KubeConfig, type V1CustomResourceValidation } from '@kubernetes/client-node';

const PERMISSIVE: V1CustomResourceValidation = {
  openAPIV3Schema: { type: 'object', x_kubernetes_preserve_unknown_fields: true },
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs `write` while the named CRDs accept anything. `schemaIsBack` must answer whether the real schema is enforced
 * again (e.g. by trying to create an invalid object and cleaning it up if that worked): the API server switches
 * schemas asynchronously, so the swap back is waited for before anyone relies on it.
 */
export async function withValidationOff(
  kc: KubeConfig,
  crdNames: string[],
  write: () => Promise<void>,
  schemaIsBack: () => Promise<boolean>,
): Promise<void> {
  const api = kc.makeApiClient(ApiextensionsV1Api);
  const originals = new Map<string, V1CustomResourceValidation | undefined>();
  for (const name of crdNames) {
    const crd = await api.readCustomResourceDefinition({ name });
    const [version, ...others] = crd.spec.versions;
    if (!version || others.length > 0) throw new Error(`${name}: expected exactly one version`);
    originals.set(name, version.schema);
    crd.spec.versions = [{ ...version, schema: PERMISSIVE }];
    await api.replaceCustomResourceDefinition({ name, body: crd });
  }
  let failure: unknown;
  try {
    await write();
  } catch (error) {
    failure = error;
  }
  // The schemas come back whatever `write` did: a test that failed half-way must not leave them off.
  await restore(api, originals, schemaIsBack);
  if (failure !== undefined) throw failure;
}

async function restore(
  api: ApiextensionsV1Api,
  originals: Map<string, V1CustomResourceValidation | undefined>,
  schemaIsBack: () => Promise<boolean>,
): Promise<void> {
  for (const [name, schema] of originals) {
    const crd = await api.readCustomResourceDefinition({ name });
    const [version] = crd.spec.versions;
    if (!version) throw new Error(`${name}: lost its version`);
    crd.spec.versions = [{ ...version, schema }];
    await api.replaceCustomResourceDefinition({ name, body: crd });
  }
  const deadline = Date.now() + 30_000;
  while (!(await schemaIsBack())) {
    if (Date.now() > deadline) throw new Error(`the schemas of ${[...originals.keys()].join(', ')} did not come back`);
    await sleep(100);
  }
}

/** Retries a write the API server may still judge by the schema it is switching away from. */
export async function whileSchemaSwitches<T>(write: () => Promise<T>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await write();
    } catch (error) {
      if ((error as { code?: number }).code !== 422 || Date.now() > deadline) throw error;
      await sleep(100);
    }
  }
}
