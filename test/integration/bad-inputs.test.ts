/**
 * Bad inputs on a real API server, with pgfsm running (issue 9's fault suite): every input of the corpus
 * (support/bad-inputs.ts) is either refused at admission with a message naming the field, or accepted and ends
 * in one Stalled condition naming it. Meanwhile the operator, at debug level with every log line captured, throws
 * for no one, logs no error about anything but a bad object, and takes healthy clusters beside the corpus (in the
 * same namespace and in another) to Ready. Then no password of any Secret involved appears in anything the
 * operator emitted: logs, Events, statuses, ConfigMaps, metrics.
 */
import { ApiException, EventsV1Api, PatchStrategy, setHeaderOptions, type V1Secret } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Condition, PostgresCluster } from '../../src/operator/api/schema.ts';
import { defaultSettings } from '../../src/operator/domain/observation.ts';
import { createLogger } from '../../src/operator/driver/logger.ts';
import { type RunningOperator, startOperator } from '../../src/operator/driver/operator.ts';
import { SoleLeader } from '../../src/operator/driver/sources.ts';
import { kubernetesPorts } from '../../src/operator/kubernetes/index.ts';
import { createWatchSources } from '../../src/operator/kubernetes/watch-sources.ts';
import { type ControlPlane, startControlPlane } from '../../src/tools/control-plane/index.ts';
import {
  type BadInput,
  classBody,
  classNameOf,
  clusterBody,
  clusterNameOf,
  corpus,
  STANDARD_CLASS,
  updateBase,
} from './support/bad-inputs.ts';
import { createClass, eventsAbout, GROUP, NS, setUpWorld, sleep, type World, waitFor } from './support/e2e.ts';
import { whileSchemaSwitches, withValidationOff } from './support/validation-off.ts';

const OTHER_NS = 'team-b';
const clusters = { ...GROUP, plural: 'postgresclusters' };
const classes = { ...GROUP, plural: 'postgresclusterclasses' };
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

let cp: ControlPlane | undefined;
let world: World | undefined;
let operator: RunningOperator | undefined;
/** Every line the operator logged, at debug level. */
const logLines: string[] = [];
/** Role Secrets' passwords this test wrote, by namespace. */
const rolePasswords = new Map<string, string>();

const w = () => {
  if (!world) throw new Error('the world did not start (see the beforeAll error)');
  return world;
};

/** The API server's refusal of a write (HTTP code and Status message), or undefined when it was accepted. */
async function refusal(request: Promise<unknown>): Promise<{ code: number; message: string } | undefined> {
  try {
    await request;
    return undefined;
  } catch (error) {
    if (!(error instanceof ApiException)) throw error;
    const body = typeof error.body === 'string' ? safeJson(error.body) : error.body;
    return { code: error.code, message: String((body as { message?: string } | undefined)?.message ?? error.body) };
  }
}

const safeJson = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    return { message: text };
  }
};

const createClusterObject = (body: Record<string, unknown>, namespace = NS, strict = false) =>
  w().custom.createNamespacedCustomObject({
    ...clusters,
    namespace,
    body,
    ...(strict ? { fieldValidation: 'Strict' } : {}),
  });

const createClassObject = (body: Record<string, unknown>) => w().custom.createClusterCustomObject({ ...classes, body });

async function readCluster(name: string, namespace = NS): Promise<PostgresCluster | undefined> {
  try {
    return (await w().custom.getNamespacedCustomObject({ ...clusters, namespace, name })) as PostgresCluster;
  } catch (error) {
    if ((error as { code?: number }).code === 404) return undefined;
    throw error;
  }
}

/** Writes an input the way its row says; returns the API server's refusal of the write under test, if any. */
async function writeInput(input: BadInput): Promise<{ code: number; message: string } | undefined> {
  if (input.via === 'update') {
    await createClusterObject({
      ...clusterBody(input, NS),
      spec: { class: STANDARD_CLASS, ...(input.base ?? updateBase) },
    });
    return refusal(
      w().custom.patchNamespacedCustomObject(
        { ...clusters, namespace: NS, name: input.id, body: { spec: input.patch } },
        mergePatch,
      ),
    );
  }
  if (input.clusterClass) {
    const refused = await refusal(createClassObject(classBody(input)));
    if (refused || !input.cluster) return refused;
  }
  return refusal(createClusterObject(clusterBody(input, NS), NS, input.via === 'strict'));
}

/** A stored input is written while the schema is off; the switch is asynchronous, so a 422 is retried. */
async function storeInput(input: BadInput): Promise<void> {
  if (input.clusterClass) await whileSchemaSwitches(() => createClassObject(classBody(input)));
  if (input.cluster) await whileSchemaSwitches(() => createClusterObject(clusterBody(input, NS)));
}

/** True once the real schemas refuse an invalid class and cluster again (a probe that got through is removed). */
async function schemasAreBack(): Promise<boolean> {
  const custom = w().custom;
  const probeCluster = await refusal(
    createClusterObject({ apiVersion: 'pgfsm.io/v1alpha1', kind: 'PostgresCluster', metadata: { name: 'probe' } }),
  );
  if (!probeCluster) await custom.deleteNamespacedCustomObject({ ...clusters, namespace: NS, name: 'probe' });
  const probeClass = await refusal(
    createClassObject({ apiVersion: 'pgfsm.io/v1alpha1', kind: 'PostgresClusterClass', metadata: { name: 'probe' } }),
  );
  if (!probeClass) await custom.deleteClusterCustomObject({ ...classes, name: 'probe' });
  return probeCluster?.code === 422 && probeClass?.code === 422;
}

async function createRoleSecret(namespace: string): Promise<void> {
  const password = `role-password-${Math.random().toString(36).slice(2)}-${namespace}`;
  rolePasswords.set(namespace, password);
  await w().core.createNamespacedSecret({
    namespace,
    body: { metadata: { name: 'app-password' }, stringData: { username: 'app', password } },
  });
}

const healthy = [
  {
    namespace: NS,
    name: 'healthy-a',
    spec: {
      class: STANDARD_CLASS,
      connectionPoolerEnabled: true,
      managedRoles: [{ name: 'app', passwordSecretRef: { name: 'app-password' } }],
    },
  },
  {
    namespace: OTHER_NS,
    name: 'healthy-b',
    spec: { class: STANDARD_CLASS, managedRoles: [{ name: 'app', passwordSecretRef: { name: 'app-password' } }] },
  },
];

beforeAll(async () => {
  cp = await startControlPlane();
  world = await setUpWorld(cp);
  await w().core.createNamespace({ body: { metadata: { name: OTHER_NS } } });
  await createClass(w(), STANDARD_CLASS);
  await createRoleSecret(NS);
  await createRoleSecret(OTHER_NS);

  // Objects stored before the rules: in place before the operator starts, as after an upgrade of pgfsm.
  await withValidationOff(
    w().admin,
    ['postgresclusters.pgfsm.io', 'postgresclusterclasses.pgfsm.io'],
    async () => {
      for (const input of corpus.filter((i) => i.via === 'stored')) await storeInput(input);
    },
    schemasAreBack,
  );

  const logger = createLogger({
    level: 'debug',
    destination: {
      write: (line: string) => {
        logLines.push(line);
      },
    },
  });
  const kc = w().operatorKc;
  operator = await startOperator({
    sources: createWatchSources(kc, { log: logger }),
    ports: kubernetesPorts(kc, { reportingInstance: 'pgfsm-bad-inputs' }),
    settings: { ...defaultSettings, requeueDelayMs: 2_000 },
    leadership: new SoleLeader('pgfsm-bad-inputs'),
    workers: 2,
    metricsAddress: '127.0.0.1:0',
    logger,
  });
});

afterAll(async () => {
  await operator?.stop();
  await world?.stop();
  await cp?.stop();
});

describe('bad inputs on a real API server, with the operator running', () => {
  const refusals = new Map<string, { code: number; message: string } | undefined>();
  const stalls = new Map<string, Condition[]>();

  it('has at least 60 inputs, each written once under a unique name', () => {
    expect(corpus.length).toBeGreaterThanOrEqual(60);
    expect(new Set(corpus.map((i) => i.id)).size).toBe(corpus.length);
    expect(new Set(corpus.map(clusterNameOf)).size).toBe(corpus.length);
  });

  it('refuses each input meant for admission with a message naming the field', async () => {
    for (const input of corpus.filter((i) => i.via !== 'stored')) refusals.set(input.id, await writeInput(input));
    const wrong = corpus
      .filter((input) => input.expect === 'rejected')
      .flatMap((input) => {
        const refused = refusals.get(input.id);
        if (!refused) return [`${input.id}: accepted, expected a refusal naming ${input.field}`];
        // Unknown fields are refused by strict decoding (400, as kubectl asks); everything else by validation.
        const code = input.via === 'strict' ? 400 : 422;
        if (refused.code !== code) return [`${input.id}: HTTP ${refused.code}, expected ${code}: ${refused.message}`];
        // Kubernetes 1.34 names a failed CEL rule's value as `Invalid value: "object": <message>`, 1.36 as
        // `Invalid value: <message>`: the corpus names the field and the message in the newer form.
        return refused.message.replaceAll('Invalid value: "object": ', 'Invalid value: ').includes(input.field)
          ? []
          : [`${input.id}: the message does not name ${input.field}: ${refused.message.slice(0, 300)}`];
      });
    expect(wrong).toEqual([]);
  });

  it('takes a healthy cluster in the same namespace and one in another to Ready while the corpus is there', async () => {
    for (const { namespace, name, spec } of healthy) {
      await createClusterObject(
        { apiVersion: 'pgfsm.io/v1alpha1', kind: 'PostgresCluster', metadata: { name, namespace }, spec },
        namespace,
      );
    }
    for (const { namespace, name } of healthy) {
      await waitFor(
        `${namespace}/${name} Ready`,
        async () => ((await readCluster(name, namespace))?.status?.state === 'Ready' ? true : undefined),
        90_000,
      );
    }
  });

  it('stops each accepted input in one Stalled condition naming the field', async () => {
    const accepted = corpus.filter((input) => input.expect === 'stalled');
    const wrong: string[] = [];
    for (const input of accepted) {
      const refused = refusals.get(input.id);
      if (refused)
        wrong.push(`${input.id}: refused (${refused.code} ${refused.message.slice(0, 200)}), expected Stalled`);
    }
    const name = (input: BadInput) => clusterNameOf(input);
    const stalled = (conditions: Condition[] | undefined) =>
      conditions?.some((c) => c.type === 'Stalled' && c.status === 'True') ?? false;
    // Every accepted input is given the same time; the ones that never stall are reported together below.
    const deadline = Date.now() + 60_000;
    for (const input of accepted) {
      for (;;) {
        const conditions = (await readCluster(name(input)))?.status?.conditions;
        if (stalled(conditions) || Date.now() > deadline) {
          stalls.set(input.id, conditions ?? []);
          break;
        }
        await sleep(200);
      }
    }
    for (const input of accepted) {
      const conditions = stalls.get(input.id) ?? [];
      const stalledOnes = conditions.filter((c) => c.type === 'Stalled');
      const cluster = await readCluster(name(input));
      if (stalledOnes.length !== 1 || stalledOnes[0]?.status !== 'True') {
        wrong.push(
          `${input.id}: not Stalled (state ${cluster?.status?.state ?? 'none'}; ${JSON.stringify(stalledOnes)})`,
        );
      } else if (!stalledOnes[0].message.includes(input.field)) {
        wrong.push(`${input.id}: Stalled does not name ${input.field}: ${stalledOnes[0].message.slice(0, 300)}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('reports each object the API server no longer lets anyone update in one StatusRejected Warning naming the field', async () => {
    const reported = corpus.filter((i) => i.expect === 'reported');
    const wrong: string[] = [];
    // Given the same time as the Stalled ones; the ones never reported are listed together below.
    const deadline = Date.now() + 60_000;
    for (const input of reported) {
      const name = clusterNameOf(input);
      let events = await eventsAbout(w(), name);
      while (!events.some((e) => e.reason === 'StatusRejected') && Date.now() < deadline) {
        await sleep(200);
        events = await eventsAbout(w(), name);
      }
      const refused = events.filter((e) => e.reason === 'StatusRejected');
      const count = refused.reduce((sum, e) => sum + e.count, 0);
      if (count !== 1) wrong.push(`${input.id}: ${count} StatusRejected Events, expected one`);
      else if (refused[0]?.type !== 'Warning' || !refused[0].note.includes(input.field))
        wrong.push(`${input.id}: StatusRejected does not name ${input.field}: ${refused[0]?.note.slice(0, 300)}`);
      // pgfsm's own judgment of the spec is announced beside it, as a failure state's Warning.
      if (!events.some((e) => e.type === 'Warning' && e.reason === 'InvalidConfiguration'))
        wrong.push(`${input.id}: no InvalidConfiguration Warning (${events.map((e) => e.reason).join(', ')})`);
      const cluster = await readCluster(name);
      if (cluster?.status !== undefined)
        wrong.push(`${input.id}: a status was stored after all; make its row 'stalled'`);
      if ((cluster?.metadata.finalizers ?? []).length > 0) wrong.push(`${input.id}: has a finalizer`);
    }
    expect(wrong).toEqual([]);
  });

  it('logged no error about anything but a bad object, and no pass threw', () => {
    const badNames = new Set(corpus.flatMap((input) => [clusterNameOf(input), classNameOf(input)]));
    const parsed = logLines.map((line) => JSON.parse(line) as Record<string, unknown>);
    const errors = parsed.filter((line) => line.level === 'error' || line.level === 'fatal');
    const aboutOthers = errors.filter((line) => !(typeof line.name === 'string' && badNames.has(line.name)));
    expect(aboutOthers.map((line) => JSON.stringify(line).slice(0, 400))).toEqual([]);
    const threw = parsed.filter((line) => line.reason === 'ReconcileThrew' || line.reason === 'MappingThrew');
    expect(threw.map((line) => JSON.stringify(line).slice(0, 400))).toEqual([]);
    expect(parsed.some((line) => line.level === 'debug')).toBe(true);
  });

  it('never lets a password into the logs, Events, statuses, ConfigMaps or metrics', async () => {
    const { core, custom, admin } = w();
    const superusers: V1Secret[] = [];
    for (const namespace of [NS, OTHER_NS]) {
      const list = await core.listNamespacedSecret({ namespace });
      superusers.push(...list.items.filter((s) => s.metadata?.name?.endsWith('-superuser')));
    }
    const passwords = [
      ...superusers.map((s) => Buffer.from(s.data?.password ?? '', 'base64').toString()),
      ...rolePasswords.values(),
    ];
    // At least the healthy clusters' superusers and the two role Secrets.
    expect(superusers.map((s) => s.metadata?.name)).toEqual(
      expect.arrayContaining(['healthy-a-superuser', 'healthy-b-superuser']),
    );
    for (const password of passwords) expect(password.length).toBeGreaterThanOrEqual(16);

    const coreEvents = await core.listEventForAllNamespaces();
    const events = await admin.makeApiClient(EventsV1Api).listEventForAllNamespaces();
    const statuses = (
      (await custom.listClusterCustomObject({ ...clusters })) as { items: PostgresCluster[] }
    ).items.map((c) => c.status);
    const configMaps = await core.listConfigMapForAllNamespaces();
    const port = operator?.server.port;
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    expect(metrics).toContain('pgfsm_');
    const places: Record<string, string> = {
      logs: logLines.join('\n'),
      events: JSON.stringify([coreEvents.items, events.items]),
      statuses: JSON.stringify(statuses),
      configMaps: JSON.stringify(configMaps.items),
      metrics,
    };
    const hits = Object.entries(places).flatMap(([place, text]) =>
      passwords.flatMap((password) =>
        [password, Buffer.from(password).toString('base64')]
          .filter((form) => text.includes(form))
          .map((form) => `${place} holds ${form === password ? 'a password' : "a password's base64"}`),
      ),
    );
    expect(hits).toEqual([]);
    const count = (outcome: string) => corpus.filter((i) => i.expect === outcome).length;
    console.log(
      `bad inputs: ${count('rejected')} rejected at admission, ${count('stalled')} stalled naming the field, ` +
        `secret hits ${hits.length}`,
    );
    console.log(
      `  also ${count('reported')} stored objects the API server no longer lets be updated, reported in Events; ` +
        `searched ${passwords.length} passwords in ${Math.round(logLines.join('\n').length / 1024)} KiB of debug logs, ` +
        `${coreEvents.items.length + events.items.length} events, ${statuses.length} statuses, ` +
        `${configMaps.items.length} ConfigMaps and the metrics`,
    );
  });
});
