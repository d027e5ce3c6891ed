/**
 * The Argo CD resource health check for each kind (PostgresCluster, PostgresDatabase), as a Lua script
 * rendered from its machine's state table. Argo CD runs it in gopher-lua (Lua 5.1): no goto, no `//`,
 * no bitwise operators, no attributes such as `<const>`.
 *
 * The script reads the published conditions, not the state name: conditions are the contract and
 * phase is informational (kubernetes.md §3.1). Only suspension is read from phase/state, because no
 * condition says "paused on purpose" and Argo CD has a dedicated `Suspended` health for it; a machine
 * without a Suspended state gets no suspension check at all.
 */
import { stringify } from 'yaml';
import { API_VERSION, GROUP } from '../../operator/api/schema.ts';
import type { HealthKind } from './kinds.ts';
import { columns, generatedNotice, READY, RECONCILING, STALLED, variantLabel } from './notice.ts';
import type { ExpectedStatus } from './table.ts';

/** Where each kind's script lives under deploy/health/: `<dir>/<kind>/health.lua`, as Argo CD names kinds. */
export const ARGO_LUA_DIR = `argocd/${GROUP}`;

/** The argocd-cm key Argo CD looks a kind's health script up under. */
export const argoHealthKey = (kind: string) => `resource.customizations.health.${GROUP}_${kind}`;

const luaSet = (names: string[]) => `{ ${[...new Set(names)].map((n) => `[${JSON.stringify(n)}] = true`).join(', ')} }`;

function verdictComment(table: ExpectedStatus[]): string {
  const rows = [
    ['state', 'Ready', 'Reconciling', 'Stalled', 'health'],
    ...table.map((r) => [variantLabel(r.state, r.variant), r.ready, r.reconciling, r.stalled, r.argo]),
  ];
  return columns(rows)
    .map((line) => `--   ${line}`.trimEnd())
    .join('\n');
}

/** The suspension check, for a machine that has Suspended states: by phase, or by state name. */
function suspension(suspended: ExpectedStatus[]) {
  if (suspended.length === 0) return { reads: '.', sets: '', check: '' };
  return {
    reads: '; status.phase and status.state only for suspension.',
    sets: `local SUSPENDED_PHASES = ${luaSet(suspended.map((r) => r.phase))}
local SUSPENDED_STATES = ${luaSet(suspended.map((r) => r.state))}

`,
    check: `if SUSPENDED_PHASES[status.phase] or SUSPENDED_STATES[status.state] then
  hs.status = "Suspended"
  hs.message = "Reconciliation is suspended (spec.suspend is true)"
  return hs
end

`,
  };
}

export function renderArgoHealthLua({ kind, source, table }: HealthKind): string {
  const suspended = suspension(table.filter((r) => r.suspended));
  return `-- ${generatedNotice([source])}
-- Argo CD health check for ${API_VERSION} ${kind} (Lua 5.1, as gopher-lua runs it).
-- Reads the conditions ${READY}, ${RECONCILING} and ${STALLED}${suspended.reads}
--
-- What each state of the machine publishes and the health this script gives it
-- (objects in the Deleting phase always carry a deletionTimestamp, hence Progressing):
${verdictComment(table)}

${suspended.sets}local function findCondition(status, conditionType)
  if status == nil or status.conditions == nil then
    return nil
  end
  for _, condition in ipairs(status.conditions) do
    if condition.type == conditionType then
      return condition
    end
  end
  return nil
end

local function isTrue(condition)
  return condition ~= nil and condition.status == "True"
end

local function messageOf(condition, fallback)
  if condition ~= nil and condition.message ~= nil and condition.message ~= "" then
    return condition.message
  end
  return fallback
end

local hs = {}
local metadata = obj.metadata or {}
local status = obj.status

-- The finalizer is being worked off; a stuck deletion still shows why in the message.
if metadata.deletionTimestamp ~= nil then
  hs.status = "Progressing"
  hs.message = "Deleting"
  local stalled = findCondition(status, "${STALLED}")
  if isTrue(stalled) then
    hs.message = "Deleting: " .. messageOf(stalled, "stalled")
  end
  return hs
end

-- Freshly created: pgfsm has not reconciled it yet.
if status == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for pgfsm to publish a status"
  return hs
end

-- Conditions describe an older spec until pgfsm has seen the current generation.
if metadata.generation ~= nil and status.observedGeneration ~= metadata.generation then
  hs.status = "Progressing"
  hs.message = "Waiting for pgfsm to observe generation " .. tostring(metadata.generation)
  return hs
end

${suspended.check}local ready = findCondition(status, "${READY}")
local reconciling = findCondition(status, "${RECONCILING}")
local stalled = findCondition(status, "${STALLED}")

-- Stalled wins: it also covers a waiting state past its progress deadline.
if isTrue(stalled) then
  hs.status = "Degraded"
  hs.message = messageOf(stalled, "Stalled")
  return hs
end

if isTrue(ready) then
  hs.status = "Healthy"
  hs.message = messageOf(ready, "Ready")
  return hs
end

if isTrue(reconciling) then
  hs.status = "Progressing"
  hs.message = messageOf(reconciling, "Reconciling")
  return hs
end

if ready == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for pgfsm to publish conditions"
  return hs
end

-- Not ready, not working, not stuck: progressing if pgfsm says False, unknown if it cannot tell.
if ready.status == "False" then
  hs.status = "Progressing"
else
  hs.status = "Unknown"
end
hs.message = messageOf(ready, "Ready is " .. tostring(ready.status))
return hs
`;
}

/** A patch for the argocd-cm ConfigMap carrying each kind's script under Argo CD's per-kind health key. */
export function renderArgoConfigMapSnippet(scripts: { kind: HealthKind; lua: string }[]): string {
  const configMap = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: 'argocd-cm',
      namespace: 'argocd',
      labels: { 'app.kubernetes.io/name': 'argocd-cm', 'app.kubernetes.io/part-of': 'argocd' },
    },
    data: Object.fromEntries(scripts.map(({ kind, lua }) => [argoHealthKey(kind.kind), lua])),
  };
  const usage = 'Merge into argocd-cm, e.g. kubectl -n argocd patch configmap argocd-cm --patch-file <this file>';
  const notice = generatedNotice(scripts.map(({ kind }) => kind.source));
  return `# ${notice}\n# ${usage}\n${stringify(configMap, { blockQuote: 'literal', lineWidth: 0 })}`;
}
