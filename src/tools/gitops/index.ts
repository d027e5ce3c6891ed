/**
 * Every file under deploy/health/, rendered from the machine. Pure: src/tools/generate/gitops-health.ts writes
 * the result and test/unit/health-artefacts.test.ts compares it with what is committed.
 */
import type { AnyStateMachine } from 'xstate';
import { postgresClusterMachine } from '../../../machines/postgres-cluster.ts';
import { renderArgoConfigMapSnippet, renderArgoHealthLua } from './argocd.ts';
import { renderFluxHealthCheckExprs } from './flux.ts';
import { renderMapping } from './mapping.ts';
import { expectedStatuses } from './table.ts';

export const ARGO_LUA_PATH = 'argocd/pgfsm.io/PostgresCluster/health.lua';
export const ARGO_CM_PATH = 'argocd/argocd-cm-snippet.yaml';
export const FLUX_PATH = 'flux/kustomization-healthcheckexprs.yaml';
export const MAPPING_PATH = 'mapping.md';

/** Paths relative to deploy/health/, in a fixed order so output is deterministic. */
export function renderHealthFiles(machine: AnyStateMachine = postgresClusterMachine): Record<string, string> {
  const table = expectedStatuses(machine);
  const lua = renderArgoHealthLua(table);
  return {
    [ARGO_LUA_PATH]: lua,
    [ARGO_CM_PATH]: renderArgoConfigMapSnippet(lua),
    [FLUX_PATH]: renderFluxHealthCheckExprs(table),
    [MAPPING_PATH]: renderMapping(table),
  };
}
