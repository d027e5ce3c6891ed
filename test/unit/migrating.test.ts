/**
 * docs/migrating.md against the code. The reference side of each table is checked against the reference
 * system's vocabulary, written down below from its specification (PR #1814 state); the pgfsm side against
 * what the code has and produces: the reason vocabulary, the write-failure reasons, the conditions the
 * status projection publishes from every state of the machine, the events the planners and the machine
 * emit, the child names, labels, phases and endpoint values.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { metaOf, restoreState, storableStates } from '../../machines/state-path.ts';
import { API_VERSION, type Condition, Phase } from '../../src/operator/api/schema.ts';
import { projectStatus, type StatusInput, type WriteFailure } from '../../src/operator/core/status.ts';
import { assess } from '../../src/operator/domain/assessment.ts';
import { CnpgPhase } from '../../src/operator/domain/components/cnpg-phases.ts';
import { desiredConfigMap, EndpointKey } from '../../src/operator/domain/components/configmap.ts';
import { defaultSettings } from '../../src/operator/domain/observation.ts';
import {
  COMPONENTS,
  CONDITION_OF,
  childLabels,
  childNames,
  EventReason,
  eventTypeOf,
  FINALIZER,
  Reason,
  stateReason,
  WRITE_FAILURE_REASON,
} from '../../src/operator/domain/vocabulary.ts';
import { type Facts, healthyFacts, NAMESPACE, observe } from '../../src/tools/fixtures/observations.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const DOC = readFileSync(join(ROOT, 'docs/migrating.md'), 'utf8');

// ---- The reference system (splunk-operator PostgresCluster controller, commit 11510ba2) ----

const REFERENCE_REASONS = new Set([
  'ClusterClassNotFound',
  'InvalidConfiguration',
  'ClusterBuildFailed',
  'ClusterGetFailed',
  'ClusterPatchFailed',
  'ClusterDeleteFailed',
  'ManagedRolesReconciled',
  'ManagedRolesPending',
  'ManagedRolesReconciliationFailed',
  'ConfigMapReconciled',
  'ConfigMapReconciliationFailed',
  'UserSecretPending',
  'UserSecretReconciliationFailed',
  'SuperUserSecretReady',
  'SuperUserSecretFailed',
  'PoolerReconciliationFailed',
  'PoolerConfigMissing',
  'PoolerCreating',
  'AllInstancesReady',
  'CNPGClusterNotHealthy',
  'CNPGClusterHealthy',
  'CNPGClusterProvisioning',
  'CNPGSwitchover',
  'CNPGFailingOver',
  'CNPGRestarting',
  'CNPGUpgrading',
  'CNPGApplyingConfiguration',
  'CNPGPromoting',
  'CNPGWaitingForUser',
  'CNPGUnrecoverable',
  'CNPGProvisioningFailed',
  'CNPGPluginError',
  'CNPGImageError',
]);

const REFERENCE_EVENTS: Record<string, 'Normal' | 'Warning'> = {
  SecretReady: 'Normal',
  ClusterAdopted: 'Normal',
  ClusterCreationStarted: 'Normal',
  ClusterUpdateStarted: 'Normal',
  ManagedRolesReady: 'Normal',
  PoolerCreationStarted: 'Normal',
  PoolerReady: 'Normal',
  ConfigMapReconciled: 'Normal',
  ConfigMapReady: 'Normal',
  ClusterReady: 'Normal',
  CleanupComplete: 'Normal',
  ClusterDegraded: 'Warning',
  CleanupFailed: 'Warning',
  ClusterClassNotFound: 'Warning',
  ConfigMergeFailed: 'Warning',
  SecretReconcileFailed: 'Warning',
  ClusterCreateFailed: 'Warning',
  ClusterUpdateFailed: 'Warning',
  ManagedRolesFailed: 'Warning',
  PoolerReconcileFailed: 'Warning',
  ConfigMapReconcileFailed: 'Warning',
};

const REFERENCE_PHASES = ['Pending', 'Provisioning', 'Configuring', 'Ready', 'Failed', 'Deleting'];
const REFERENCE_CONDITIONS = ['ClusterReady', 'SecretsReady', 'ManagedRolesReady', 'PoolerReady', 'ConfigMapsReady'];
const REFERENCE_CHILDREN: Record<string, string> = {
  secret: '<name>-secret',
  cnpgCluster: '<name>',
  poolerRw: '<name>-pooler-rw',
  poolerRo: '<name>-pooler-ro',
  configMap: '<name>-configmap',
};

// ---- The doc's tables ----

type Row = Record<string, string>;

const cellsOf = (line: string) =>
  line
    .trim()
    .replace(/^\|/, '')
    .replace(/\|$/, '')
    .split('|')
    .map((c) => c.trim());

/** The first table after the heading line `heading`, as rows keyed by the header cells. */
function tableUnder(heading: string): Row[] {
  const lines = DOC.split('\n');
  const at = lines.indexOf(heading);
  if (at < 0) throw new Error(`docs/migrating.md has no heading "${heading}"`);
  const start = lines.findIndex((l, i) => i > at && l.startsWith('|'));
  const end = lines.findIndex((l, i) => i > start && !l.startsWith('|'));
  const [header, separator, ...body] = lines.slice(start, end < 0 ? undefined : end);
  if (!header || !separator?.includes('---')) throw new Error(`no table under "${heading}"`);
  const headers = cellsOf(header);
  return body.map((line) => {
    const cells = cellsOf(line);
    if (cells.length !== headers.length) throw new Error(`a row of "${heading}" has ${cells.length} cells: ${line}`);
    return Object.fromEntries(headers.map((h, i) => [h, cells[i] ?? '']));
  });
}

/** The backticked names in a cell. */
const tokens = (cell: string | undefined) => [...(cell ?? '').matchAll(/`([^`]+)`/g)].map((m) => m[1] ?? '');

const col = (rows: Row[], name: string) => rows.flatMap((r) => tokens(r[name]));

// ---- What the code has and produces ----

const phases = (Phase.anyOf as Array<{ const: string }>).map((p) => p.const);
const STATES = storableStates();

/** Sample worlds: healthy, empty, and one deviation at a time. */
const WORLDS: Array<Partial<Facts>> = [
  {},
  { secret: 'missing', cnpg: 'missing', poolers: 'missing', configMap: 'missing' },
  { classPresent: false },
  { specValid: false },
  { secret: 'orphan' },
  { secret: 'noKey' },
  { cnpg: 'drifted' },
  { cnpg: 'scaling' },
  { cnpg: 'released' },
  { cnpg: '' },
  { cnpg: CnpgPhase.FirstPrimary },
  { cnpg: CnpgPhase.Switchover },
  { cnpg: CnpgPhase.WaitingForUser },
  { rolesState: 'pending' },
  { rolesState: 'failed' },
  { rolesState: 'secretMissing' },
  { roles: [] },
  { poolers: 'notReady' },
  { poolers: 'drifted' },
  { poolers: 'foreign' },
  { poolerEnabled: false },
  { configMap: 'missing' },
  { configMap: 'drifted' },
  { configMap: 'foreign' },
];

const FAILURES: WriteFailure[] = [
  ...COMPONENTS.map((component) => ({ component, reason: WRITE_FAILURE_REASON[component], message: 'x' })),
  { reason: WRITE_FAILURE_REASON.finalizer, message: 'x' },
];

/** Every condition the status projection publishes from every storable state in every sample world. */
function projectedConditions(): Condition[] {
  const now = Date.parse('2026-11-30T12:00:00Z');
  const settings = defaultSettings;
  const out: Condition[] = [];
  const assessments = WORLDS.map((w) => assess(observe({ ...healthyFacts, ...w }), settings, 0));
  const project = (state: string, input: Omit<StatusInput, 'state' | 'meta' | 'previous' | 'now' | 'settings'>) => {
    const snapshot = restoreState(state);
    if (!snapshot) throw new Error(`cannot restore ${state}`);
    const meta = metaOf(snapshot);
    const status = projectStatus({ state, meta, previous: undefined, now, settings, ...input });
    out.push(...(status.conditions ?? []));
  };
  for (const state of STATES) {
    for (const assessment of assessments) {
      for (const since of [now, now - settings.progressDeadlineMs - 60_000]) project(state, { assessment, since });
    }
    // A failed write, in the healthy world: reported on its component's condition, or on Ready.
    for (const failure of FAILURES)
      project(state, { assessment: assessments[0] ?? assess(observe(healthyFacts), settings, 0), since: now, failure });
  }
  return out;
}

const PROJECTED = projectedConditions();
const PROJECTED_REASONS = new Set(PROJECTED.map((c) => c.reason));
const CONDITION_VOCABULARY = new Set([
  ...Object.values(Reason),
  ...Object.values(WRITE_FAILURE_REASON),
  ...PROJECTED_REASONS,
]);

/** What a `<Placeholder>` in a documented reason stands for. */
const PLACEHOLDERS: Record<string, string[]> = {
  Condition: Object.values(CONDITION_OF),
  State: STATES.map(stateReason),
  Phase: phases,
};

/** The reasons a templated name such as `WaitingFor<Condition>` stands for. */
function expansions(name: string): string[] {
  const match = /<([A-Za-z]+)>/.exec(name);
  if (!match) return [name];
  const values = PLACEHOLDERS[match[1] ?? ''];
  if (!values) throw new Error(`unknown placeholder in ${name}`);
  return values.map((v) => name.replace(match[0], v));
}
const isTemplate = (name: string) => name.includes('<');

/**
 * Each row's Change label agrees with both vocabularies: `removed` only for names pgfsm lacks, `new` only
 * for names the reference lacks, `kept` when the name stays, a rename (or move) only when pgfsm dropped it.
 */
function expectTruthfulChanges(
  rows: Row[],
  {
    inPgfsm,
    inReference,
    renamed,
    kept,
  }: {
    inPgfsm: (name: string) => boolean;
    inReference: (name: string) => boolean;
    renamed: RegExp;
    kept?: (row: Row, ref: string) => void;
  },
): void {
  for (const row of rows) {
    const [ref] = tokens(row.Reference);
    const mine = tokens(row.pgfsm);
    const change = row.Change ?? '';
    if (mine.length === 0) {
      expect(change, `${ref}`).toMatch(/^removed/);
      expect(inPgfsm(ref ?? ''), `${ref} is said removed but pgfsm has it`).toBe(false);
    } else if (!ref) {
      expect(change, `${mine}`).toMatch(/^new/);
      for (const name of mine) expect(inReference(name), `${name} is said new`).toBe(false);
    } else if (mine.includes(ref)) {
      expect(change, ref).toMatch(/^kept/);
      kept?.(row, ref);
    } else {
      expect(change, ref).toMatch(renamed);
      expect(inPgfsm(ref), `${ref} is said renamed but pgfsm still has it`).toBe(false);
    }
  }
}

/** The events pgfsm emits of its own, with their type: the vocabulary's table (the compiler holds every emitter to it). */
function ownEvents(): Map<string, 'Normal' | 'Warning'> {
  return new Map(Object.values(EventReason).map((reason) => [reason, eventTypeOf(reason)]));
}

/** Every event reason pgfsm emits, with its type. Failure states emit a Warning with the condition's reason. */
function eventVocabulary(): Map<string, 'Normal' | 'Warning'> {
  const events = new Map<string, 'Normal' | 'Warning'>();
  for (const reason of Object.values(Reason)) events.set(reason, 'Warning');
  for (const reason of Object.values(WRITE_FAILURE_REASON)) events.set(reason, 'Warning');
  for (const [reason, type] of ownEvents()) events.set(reason, type);
  return events;
}

// ---- The tests ----

describe('docs/migrating.md: condition reasons', () => {
  const rows = tableUnder('### Condition reasons');
  const pgfsm = col(rows, 'pgfsm');

  it('lists every reference reason exactly once, and nothing else as one', () => {
    const reference = col(rows, 'Reference');
    expect([...reference].sort()).toEqual([...REFERENCE_REASONS].sort());
  });

  it('names only reasons that pgfsm has or publishes', () => {
    for (const name of pgfsm) {
      if (isTemplate(name)) {
        expect(
          expansions(name).some((r) => PROJECTED_REASONS.has(r)),
          `${name} matches no published reason`,
        ).toBe(true);
      } else {
        expect(CONDITION_VOCABULARY.has(name), `${name} is not a pgfsm reason`).toBe(true);
      }
    }
  });

  it('names every reason of the vocabulary that differs from the reference', () => {
    const named = new Set(pgfsm.flatMap(expansions));
    const differing = [...CONDITION_VOCABULARY].filter((r) => !REFERENCE_REASONS.has(r));
    expect(differing.length).toBeGreaterThan(10);
    expect(differing.filter((r) => !named.has(r))).toEqual([]);
  });

  it('says kept, renamed, removed or new truthfully', () => {
    expectTruthfulChanges(rows, {
      inPgfsm: (name) => CONDITION_VOCABULARY.has(name),
      inReference: (name) => REFERENCE_REASONS.has(name),
      renamed: /^(renamed|moved)/,
    });
  });

  it('puts each reason on the condition pgfsm publishes it on', () => {
    const summary = new Set(['Ready', 'Reconciling', 'Stalled']);
    let checked = 0;
    for (const row of rows) {
      const documented = tokens(row.Condition);
      for (const name of tokens(row.pgfsm)) {
        if (isTemplate(name) || documented.length === 0) continue;
        const types = new Set(PROJECTED.filter((c) => c.reason === name).map((c) => c.type));
        const own = [...types].filter((t) => !summary.has(t));
        const expected = own.length > 0 ? own : [...types];
        for (const type of expected) expect(documented, `${name} is published on ${type}`).toContain(type);
        if (expected.length > 0) checked++;
      }
    }
    expect(checked).toBeGreaterThan(25);
  });
});

describe('docs/migrating.md: conditions and phases', () => {
  it('lists the condition types of both sides', () => {
    const rows = tableUnder('### Condition types');
    expect(col(rows, 'Reference').sort()).toEqual([...REFERENCE_CONDITIONS].sort());
    expect(col(rows, 'pgfsm').sort()).toEqual([...new Set(PROJECTED.map((c) => c.type))].sort());
  });

  it('lists the phases of both sides, and pgfsm writes each of its phases in some state', () => {
    const rows = tableUnder('### Phases');
    expect(col(rows, 'Reference').sort()).toEqual([...REFERENCE_PHASES].sort());
    expect(col(rows, 'pgfsm').sort()).toEqual([...phases].sort());
    const written = new Set(
      STATES.map((s) => {
        const snapshot = restoreState(s);
        if (!snapshot) throw new Error(`cannot restore ${s}`);
        return metaOf(snapshot).phase;
      }),
    );
    expect([...written].sort()).toEqual([...phases].sort());
  });
});

describe('docs/migrating.md: events', () => {
  const rows = tableUnder('## Events');
  const vocabulary = eventVocabulary();
  const pgfsm = col(rows, 'pgfsm');

  it('lists every reference event exactly once', () => {
    expect(col(rows, 'Reference').sort()).toEqual(Object.keys(REFERENCE_EVENTS).sort());
  });

  it('names only events pgfsm emits, with their type', () => {
    for (const row of rows) {
      for (const name of tokens(row.pgfsm)) {
        expect(vocabulary.get(name), `${name} is not a pgfsm ${row.Type} event`).toBe(row.Type);
      }
    }
  });

  it('names every event pgfsm emits that differs from the reference', () => {
    const fixed = new Set([...ownEvents().keys(), ...Object.values(WRITE_FAILURE_REASON)]);
    expect(fixed.size).toBeGreaterThan(20);
    const differing = [...fixed].filter((r) => REFERENCE_EVENTS[r] === undefined);
    expect(differing.filter((r) => !pgfsm.includes(r))).toEqual([]);
  });

  it('says kept, renamed, removed or new truthfully', () => {
    expectTruthfulChanges(rows, {
      // An event of that name and type: a reference Normal event is gone when pgfsm has the name only as a
      // condition reason (`ConfigMapReconciled`), which a failure state could at most send as a Warning.
      inPgfsm: (name) =>
        REFERENCE_EVENTS[name] === undefined ? vocabulary.has(name) : vocabulary.get(name) === REFERENCE_EVENTS[name],
      inReference: (name) => REFERENCE_EVENTS[name] !== undefined,
      renamed: /^renamed/,
      kept: (row, ref) => expect(row.Type, ref).toBe(REFERENCE_EVENTS[ref]),
    });
  });
});

describe('docs/migrating.md: names', () => {
  const sample = 'orders';
  const expand = (template: string) => template.replaceAll('<name>', sample);
  const ROW_OF: Record<string, keyof ReturnType<typeof childNames>> = {
    'Superuser Secret': 'secret',
    'CNPG Cluster': 'cnpgCluster',
    'Pooler (rw)': 'poolerRw',
    'Pooler (ro)': 'poolerRo',
    'Endpoints ConfigMap': 'configMap',
  };

  it('gives the child names of childNames(), and the reference names', () => {
    const rows = tableUnder('### Child objects');
    const mine: Record<string, string> = {};
    const reference: Record<string, string> = {};
    for (const row of rows) {
      const key = ROW_OF[row.Object ?? ''];
      if (!key) throw new Error(`unknown child row "${row.Object}"`);
      const [pgfsm] = tokens(row.pgfsm);
      const [ref] = tokens(row.Reference);
      mine[key] = expand(pgfsm ?? '');
      reference[key] = ref ?? '';
    }
    expect(mine).toEqual(childNames(sample));
    expect(reference).toEqual(REFERENCE_CHILDREN);
  });

  it('gives the API version, the finalizer and the labels', () => {
    const api = tableUnder('## API and names');
    const item = (name: string) => api.find((r) => r.Item === name);
    expect(tokens(item('Group/version')?.pgfsm)).toEqual([API_VERSION]);
    expect(tokens(item('Finalizer')?.pgfsm)).toEqual([FINALIZER]);
    const labels = tableUnder('### Labels and annotations')[0];
    const expected = Object.entries(childLabels('<name>')).map(([k, v]) => `${k}=${v}`);
    expect(tokens(labels?.pgfsm)).toEqual(expected);
  });

  it('gives the endpoint keys and the values pgfsm publishes', () => {
    const rows = tableUnder('## Endpoints ConfigMap');
    expect(rows.map((r) => tokens(r.Key)[0])).toEqual(Object.values(EndpointKey));
    const observation = observe(healthyFacts);
    const config = assess(observation, defaultSettings, 0).config;
    if (!config) throw new Error('fixture config invalid');
    const data = desiredConfigMap(observation, config, defaultSettings).data ?? {};
    expect(Object.keys(data).sort()).toEqual(Object.values(EndpointKey).sort());
    for (const row of rows) {
      const key = tokens(row.Key)[0] ?? '';
      const value = (tokens(row.pgfsm)[0] ?? '')
        .replaceAll('<name>', observation.cluster.metadata.name)
        .replaceAll('<ns>', NAMESPACE)
        .replaceAll('<cluster domain>', defaultSettings.clusterDomain);
      expect(value, key).toBe(data[key]);
    }
  });
});

describe('docs/migrating.md: links', () => {
  const slug = (heading: string) =>
    heading
      .toLowerCase()
      .replace(/[^a-z0-9 -]/g, '')
      .replaceAll(' ', '-');

  it('leads to files and headings that exist', () => {
    const links = [...DOC.matchAll(/\]\(([^)#\s]+)(?:#([^)\s]+))?\)/g)];
    expect(links.length).toBeGreaterThan(2);
    for (const [, path = '', anchor] of links) {
      const target = readFileSync(join(ROOT, 'docs', path), 'utf8');
      if (!anchor) continue;
      const slugs = target
        .split('\n')
        .filter((l) => l.startsWith('#'))
        .map((l) => slug(l.replace(/^#+\s*/, '')));
      expect(slugs, `${path}#${anchor}`).toContain(anchor);
    }
  });
});
