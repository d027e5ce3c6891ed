/**
 * Every file under deploy/health/, rendered from the machines: a health.lua per kind, and one argocd-cm
 * snippet, one Flux fragment and one mapping table for all of them. Pure: src/tools/generate/gitops-health.ts
 * writes the result and test/unit/health-artefacts.test.ts compares it with what is committed.
 */
import type { MachineDescription } from '../../../machines/chart.ts';
import { ARGO_LUA_DIR, renderArgoConfigMapSnippet, renderArgoHealthLua } from './argocd.ts';
import { renderFluxHealthCheckExprs } from './flux.ts';
import { healthKinds } from './kinds.ts';
import { renderMapping } from './mapping.ts';

/** Where a kind's Argo CD script is written: `argocd/pgfsm.io/PostgresCluster/health.lua`. */
export const argoLuaPath = (kind: string) => `${ARGO_LUA_DIR}/${kind}/health.lua`;
export const ARGO_CM_PATH = 'argocd/argocd-cm-snippet.yaml';
export const FLUX_PATH = 'flux/kustomization-healthcheckexprs.yaml';
export const MAPPING_PATH = 'mapping.md';

/** Paths relative to deploy/health/, in a fixed order (kinds in `MACHINES` order) so output is deterministic. */
export function renderHealthFiles(machines?: readonly MachineDescription[]): Record<string, string> {
  const kinds = healthKinds(machines);
  const scripts = kinds.map((kind) => ({ kind, lua: renderArgoHealthLua(kind) }));
  return {
    ...Object.fromEntries(scripts.map(({ kind, lua }) => [argoLuaPath(kind.kind), lua])),
    [ARGO_CM_PATH]: renderArgoConfigMapSnippet(scripts),
    [FLUX_PATH]: renderFluxHealthCheckExprs(kinds),
    [MAPPING_PATH]: renderMapping(kinds),
  };
}
