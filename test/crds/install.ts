/**
 * Installs CustomResourceDefinitions from YAML files into a test API server and waits until they are
 * Established (served), so a test can create objects of those kinds right away.
 */
import { readFileSync } from 'node:fs';
import {
  ApiException,
  ApiextensionsV1Api,
  type KubeConfig,
  loadAllYaml,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';

export const PGFSM_CRDS = [
  new URL('../../deploy/crds/pgfsm.io_postgresclusters.yaml', import.meta.url),
  new URL('../../deploy/crds/pgfsm.io_postgresclusterclasses.yaml', import.meta.url),
];

export const CNPG_TEST_CRDS = [
  new URL('./postgresql.cnpg.io_clusters.yaml', import.meta.url),
  new URL('./postgresql.cnpg.io_poolers.yaml', import.meta.url),
];

/**
 * Parsed with client-node's own loader, which maps wire names onto its model names: a plain YAML parse
 * handed to the typed API silently loses `enum`, `default` and `x-kubernetes-validations`, because the
 * serializer reads the model names (`_enum`, `_default`, `xKubernetesValidations`) and drops the rest.
 */
export function readCrds(files: URL[]): V1CustomResourceDefinition[] {
  return files.flatMap((file) =>
    (loadAllYaml(readFileSync(file, 'utf8')) as (V1CustomResourceDefinition | null)[]).filter(
      (crd): crd is V1CustomResourceDefinition => crd?.kind === 'CustomResourceDefinition',
    ),
  );
}

/** Creates each CRD (a rejection, e.g. a CEL rule that does not compile, throws with the server's message). */
export async function installCrds(kc: KubeConfig, files: URL[], timeoutMs = 30_000): Promise<string[]> {
  const api = kc.makeApiClient(ApiextensionsV1Api);
  const names: string[] = [];
  for (const body of readCrds(files)) {
    const name = body.metadata?.name ?? '';
    try {
      await api.createCustomResourceDefinition({ body });
    } catch (error) {
      if (error instanceof ApiException) {
        throw new Error(`CRD ${name} was rejected (HTTP ${error.code}): ${messageOf(error.body)}`);
      }
      throw error;
    }
    names.push(name);
  }
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

function messageOf(body: unknown): string {
  try {
    const status = typeof body === 'string' ? JSON.parse(body) : body;
    return String((status as { message?: unknown }).message ?? body);
  } catch {
    return String(body);
  }
}
