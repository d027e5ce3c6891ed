-- Generated from machines/postgres-cluster.ts by src/tools/generate/gitops-health.ts — do not edit
-- Argo CD health check for pgfsm.io/v1alpha1 PostgresCluster (Lua 5.1, as gopher-lua runs it).
-- Reads the conditions Ready, Reconciling and Stalled; status.phase and status.state only for suspension.
--
-- What each state of the machine publishes and the health this script gives it
-- (objects in the Deleting phase always carry a deletionTimestamp, hence Progressing):
--   state                                       Ready  Reconciling  Stalled  health
--   Pending                                     False  True         False    Progressing
--   Pending (past deadline)                     False  False        True     Degraded
--   Provisioning.Secret                         False  True         False    Progressing
--   Provisioning.Secret (past deadline)         False  False        True     Degraded
--   Provisioning.Restore                        False  True         False    Progressing
--   Provisioning.Restore (past deadline)        False  False        True     Degraded
--   Provisioning.Cluster                        False  True         False    Progressing
--   Provisioning.Cluster (past deadline)        False  False        True     Degraded
--   Provisioning.ClusterStaged                  False  True         False    Progressing
--   Provisioning.ClusterStaged (past deadline)  False  False        True     Degraded
--   Provisioning.ManagedRoles                   False  True         False    Progressing
--   Provisioning.ManagedRoles (past deadline)   False  False        True     Degraded
--   Provisioning.Pooler                         False  True         False    Progressing
--   Provisioning.Pooler (past deadline)         False  False        True     Degraded
--   Provisioning.ConfigMap                      False  True         False    Progressing
--   Provisioning.ConfigMap (past deadline)      False  False        True     Degraded
--   Ready                                       True   False        False    Healthy
--   Degraded                                    False  True         False    Progressing
--   Degraded (past deadline)                    False  False        True     Degraded
--   Failed.ClassMissing                         False  False        True     Degraded
--   Failed.InvalidSpec                          False  False        True     Degraded
--   Failed.Secret                               False  False        True     Degraded
--   Failed.Cluster                              False  False        True     Degraded
--   Failed.ManagedRoles                         False  False        True     Degraded
--   Failed.Pooler                               False  False        True     Degraded
--   Failed.ConfigMap                            False  False        True     Degraded
--   Suspended                                   False  False        False    Suspended
--   Deleting.Poolers                            False  True         False    Progressing
--   Deleting.Poolers (past deadline)            False  False        True     Progressing
--   Deleting.ApplyPolicy                        False  True         False    Progressing
--   Deleting.ApplyPolicy (past deadline)        False  False        True     Progressing
--   Deleting.RemoveFinalizer                    False  True         False    Progressing
--   Deleted                                     False  False        False    Progressing

local SUSPENDED_PHASES = { ["Suspended"] = true }
local SUSPENDED_STATES = { ["Suspended"] = true }

local function findCondition(status, conditionType)
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
  local stalled = findCondition(status, "Stalled")
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

if SUSPENDED_PHASES[status.phase] or SUSPENDED_STATES[status.state] then
  hs.status = "Suspended"
  hs.message = "Reconciliation is suspended (spec.suspend is true)"
  return hs
end

local ready = findCondition(status, "Ready")
local reconciling = findCondition(status, "Reconciling")
local stalled = findCondition(status, "Stalled")

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
