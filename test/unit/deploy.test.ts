/**
 * deploy/ and the Dockerfile, statically: every manifest parses; the kustomize base installs the CRDs,
 * the RBAC, the Deployment, its Service and its PodDisruptionBudget; the Deployment matches what the
 * operator needs (probes on the paths the server serves, the lease the Role allows, only variables
 * `pgfsm run` understands, a V8 heap budget with room under the memory limit); the namespaced overlay
 * installs the same with namespaced Roles only, in exactly the namespaces it tells the operator to watch;
 * the image is multi-stage, Node 20, non-root and runs the CLI.
 *
 * There is no Docker engine where this was written: buildah builds the Dockerfile (src/tools/node/images.ts) and
 * the e2e suite runs the image on a real node (test/e2e/).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { leaseNamespaceOf, type RunOptions, registerRun, watchedNamespaces } from '../../src/operator/cli/run.ts';
import { stopOnSignals } from '../../src/operator/driver/operator.ts';
import { parseAddress, startServer } from '../../src/operator/driver/server.ts';
import { runOptions } from '../../src/tools/docs/options.ts';
import { renderKustomization } from '../../src/tools/install/kustomize.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DEPLOY = join(ROOT, 'deploy');

type Obj = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [field: string]: unknown;
};

function yamlFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return yamlFiles(path);
    return /\.ya?ml$/.test(entry) ? [path] : [];
  });
}

function parseFile(path: string): Obj[] {
  return parseAllDocuments(readFileSync(path, 'utf8')).flatMap((doc) => {
    if (doc.errors.length > 0) throw new Error(`${relative(ROOT, path)}: ${doc.errors[0]?.message}`);
    const value = doc.toJS() as Obj | null;
    return value ? [value] : [];
  });
}

/**
 * What `kubectl apply -k dir` sends, by the renderer the integration tests install from (it refuses any
 * kustomize feature it does not implement; its output was compared with `kubectl kustomize`, v5.5.0,
 * object for object, for deploy/ and deploy/overlays/namespaced/).
 */
function build(dir: string, seen: string[] = []): Array<{ file: string; object: Obj }> {
  return renderKustomization(dir, seen).map(({ file, object }) => ({
    file: relative(ROOT, file),
    object: object as Obj,
  }));
}

const listed: string[] = [];
const installed = build(DEPLOY, listed);
const objects = installed.map((i) => i.object);
const find = (kind: string, name?: string) =>
  objects.filter((o) => o.kind === kind && (name === undefined || o.metadata.name === name));
const one = <T>(kind: string, name?: string): Obj & T => {
  const found = find(kind, name);
  expect(found, `${kind} ${name ?? ''}`).toHaveLength(1);
  return found[0] as Obj & T;
};

interface Probe {
  httpGet: { path: string; port: string | number };
}
interface Container {
  name: string;
  image: string;
  args?: string[];
  env?: Array<{ name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }>;
  ports?: Array<{ name?: string; containerPort: number }>;
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  startupProbe?: Probe;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: Record<string, unknown>;
  volumeMounts?: Array<{ name: string; mountPath: string }>;
}
interface PodSpec {
  serviceAccountName?: string;
  terminationGracePeriodSeconds?: number;
  securityContext?: Record<string, unknown>;
  affinity?: { podAntiAffinity?: { preferredDuringSchedulingIgnoredDuringExecution?: unknown[] } };
  topologySpreadConstraints?: unknown[];
  containers: Container[];
  volumes?: Array<{ name: string; emptyDir?: unknown }>;
}
type Deployment = {
  spec: {
    replicas: number;
    selector: { matchLabels: Record<string, string> };
    template: { metadata: { labels: Record<string, string> }; spec: PodSpec };
  };
};
type Rule = { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] };
type Binding = {
  roleRef: { kind: string; name: string };
  subjects: Array<{ kind: string; name: string; namespace?: string }>;
};

const deployment = one<Deployment>('Deployment', 'pgfsm');
const pod = deployment.spec.template.spec;
const container = pod.containers[0] as Container;
/** Node's own variable, not `pgfsm run`'s: the V8 heap budget (see the heap budget test). */
const NODE_OPTIONS = 'NODE_OPTIONS';
const env = Object.fromEntries((container.env ?? []).filter((e) => e.name !== NODE_OPTIONS).map((e) => [e.name, e]));
const nodeOptions = container.env?.find((e) => e.name === NODE_OPTIONS);
const serviceAccount = one('ServiceAccount', 'pgfsm');

const matches = (selector: Record<string, string>, labels: Record<string, string>) =>
  Object.entries(selector).every(([k, v]) => labels[k] === v);

describe('deploy/ manifests', () => {
  it('every YAML file under deploy/ parses', () => {
    const files = yamlFiles(DEPLOY);
    expect(files.length).toBeGreaterThan(10);
    for (const file of files) expect(() => parseFile(file), relative(ROOT, file)).not.toThrow();
  });

  it('the kustomize base lists crds/, rbac/ and manager/, and every resource it lists exists', () => {
    const root = parseFile(join(DEPLOY, 'kustomization.yaml'))[0] as unknown as { resources: string[] };
    expect(root.resources).toEqual(expect.arrayContaining(['crds', 'rbac', 'manager']));
    for (const path of listed) expect(existsSync(path), relative(ROOT, path)).toBe(true);
  });

  it('no manifest in an installed directory is left out of its kustomization', () => {
    for (const dir of ['crds', 'rbac', 'manager']) {
      const files = yamlFiles(join(DEPLOY, dir)).filter((f) => !f.endsWith('kustomization.yaml'));
      for (const file of files) expect(listed, `${relative(ROOT, file)} is not installed`).toContain(file);
    }
  });

  it('installs the CRDs, the RBAC, the Deployment, its Service and its PodDisruptionBudget', () => {
    expect(find('CustomResourceDefinition').map((c) => c.metadata.name)).toEqual(
      expect.arrayContaining([
        'postgresclusters.pgfsm.io',
        'postgresclusterclasses.pgfsm.io',
        'postgresdatabases.pgfsm.io',
      ]),
    );
    for (const kind of [
      'Namespace',
      'ServiceAccount',
      'ClusterRole',
      'ClusterRoleBinding',
      'Role',
      'RoleBinding',
      'Deployment',
      'Service',
      'PodDisruptionBudget',
    ]) {
      expect(find(kind).length, kind).toBeGreaterThan(0);
    }
    const names = objects.map((o) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`);
    expect(new Set(names).size, 'an object is installed twice').toBe(names.length);
  });

  it('namespaced objects live in the Namespace it creates', () => {
    const namespace = one('Namespace').metadata.name;
    expect(namespace).toBe('pgfsm-system');
    for (const o of objects) {
      if (['Namespace', 'CustomResourceDefinition', 'ClusterRole', 'ClusterRoleBinding'].includes(o.kind)) continue;
      expect(o.metadata.namespace, `${o.kind} ${o.metadata.name}`).toBe(namespace);
    }
  });
});

describe('the Deployment', () => {
  it('runs two replicas of the operator image with `run`', () => {
    expect(deployment.metadata.namespace).toBe('pgfsm-system');
    expect(deployment.spec.replicas).toBe(2);
    expect(matches(deployment.spec.selector.matchLabels, deployment.spec.template.metadata.labels)).toBe(true);
    expect(pod.containers).toHaveLength(1);
    expect(container.image).toBe('ghcr.io/pgfsm/pgfsm:0.1.0');
    expect(container.args).toEqual(['run']);
  });

  it('runs as the ServiceAccount of deploy/rbac, which the ClusterRoleBinding binds', () => {
    expect(pod.serviceAccountName).toBe(serviceAccount.metadata.name);
    expect(serviceAccount.metadata.namespace).toBe(deployment.metadata.namespace);
    const binding = one<Binding>('ClusterRoleBinding', 'pgfsm');
    expect(binding.subjects).toContainEqual({
      kind: 'ServiceAccount',
      name: serviceAccount.metadata.name,
      namespace: deployment.metadata.namespace,
    });
    expect(find('ClusterRole', binding.roleRef.name)).toHaveLength(1);
  });

  it('sets only variables `pgfsm run` understands (and NODE_OPTIONS), and those it sets parse to the defaults', async () => {
    const known = new Set([...runOptions().flatMap((o) => (o.env ? [o.env] : [])), 'POD_NAMESPACE']);
    for (const name of Object.keys(env)) expect(known, `${name} is not a pgfsm run variable`).toContain(name);
    const values = Object.fromEntries(
      Object.values(env).flatMap((e) => (e.value !== undefined ? [[e.name, e.value]] : [])),
    );
    expect(Object.keys(values).every((name) => name.startsWith('PGFSM_'))).toBe(true);
    expect(await parseRun(values)).toEqual(await parseRun({}));
  });

  it('takes POD_NAMESPACE from the downward API, and the lease lives there', () => {
    expect(env.POD_NAMESPACE?.valueFrom?.fieldRef?.fieldPath).toBe('metadata.namespace');
    process.env.POD_NAMESPACE = deployment.metadata.namespace;
    expect(leaseNamespaceOf({})).toBe(deployment.metadata.namespace);
  });

  it('elects a leader through the Lease the leader-election Role covers, bound to its ServiceAccount', async () => {
    const options = await parseRun(
      Object.fromEntries(Object.values(env).flatMap((e) => (e.value !== undefined ? [[e.name, e.value]] : []))),
    );
    expect(options.leaderElect).toBe(true);
    expect(options.leaseName).toBe('pgfsm-leader');
    const lease = { namespace: deployment.metadata.namespace, name: options.leaseName };

    const fromFile = parseFile(join(DEPLOY, 'rbac/leader-election.yaml'));
    const role = fromFile.find((o) => o.kind === 'Role') as (Obj & { rules: Rule[] }) | undefined;
    const roleBinding = fromFile.find((o) => o.kind === 'RoleBinding') as (Obj & Binding) | undefined;
    expect(role?.metadata.namespace).toBe(lease.namespace);
    const leaseRules = (role?.rules ?? []).filter(
      (r) => r.apiGroups.includes('coordination.k8s.io') && r.resources.includes('leases'),
    );
    // get and update only on the Lease the Deployment names; create cannot be narrowed by name in RBAC.
    const named = leaseRules.filter((r) => r.resourceNames !== undefined);
    expect(named.flatMap((r) => r.verbs).sort()).toEqual(['get', 'update']);
    for (const r of named) expect(r.resourceNames).toEqual([lease.name]);
    expect(leaseRules.filter((r) => r.resourceNames === undefined).flatMap((r) => r.verbs)).toEqual(['create']);
    expect(roleBinding?.metadata.namespace).toBe(lease.namespace);
    expect(roleBinding?.roleRef).toMatchObject({ kind: 'Role', name: role?.metadata.name });
    expect(roleBinding?.subjects).toContainEqual({
      kind: 'ServiceAccount',
      name: pod.serviceAccountName,
      namespace: deployment.metadata.namespace,
    });
  });

  it('probes /healthz and /readyz on the port --metrics-addr listens on', async () => {
    const port = container.ports?.find((p) => p.name === 'metrics');
    expect(port?.containerPort).toBe(8080);
    const options = await parseRun({});
    expect(parseAddress(options.metricsAddr).port).toBe(port?.containerPort);
    expect(container.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 'metrics' });
    expect(container.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: 'metrics' });
    if (container.startupProbe) expect(container.startupProbe.httpGet).toEqual({ path: '/healthz', port: 'metrics' });
  });

  it('the probe paths are the ones the operator serves', async () => {
    const { Registry } = await import('prom-client');
    const server = await startServer({ address: '127.0.0.1:0', registry: new Registry(), readiness: () => [] });
    try {
      for (const probe of [container.livenessProbe, container.readinessProbe]) {
        const response = await fetch(`http://127.0.0.1:${server.port}${probe?.httpGet.path}`);
        expect(response.status, probe?.httpGet.path).toBe(200);
      }
    } finally {
      await server.close();
    }
  });

  it('asks for the resources the benchmark measured (bench/results.md)', () => {
    expect(container.resources).toEqual({
      requests: { cpu: '100m', memory: '192Mi' },
      limits: { cpu: '1', memory: '512Mi' },
    });
  });

  it('gives V8 one heap budget, with room under the memory limit for what lives off the heap', () => {
    // Through NODE_OPTIONS, so that an overlay that changes limits.memory can change it beside it.
    const flags = (nodeOptions?.value ?? '').split(/\s+/).filter(Boolean);
    const budgets = flags.flatMap((f) => /^--max-old-space-size=(\d+)$/.exec(f)?.[1] ?? []).map(Number);
    expect(budgets).toHaveLength(1);
    // Only flags that Node accepts in NODE_OPTIONS and that change nothing but the heap.
    expect(flags.every((f) => f.startsWith('--max-old-space-size='))).toBe(true);
    const mib = (quantity: string | undefined) => {
      const match = /^(\d+)(Mi|Gi)$/.exec(quantity ?? '');
      if (!match) throw new Error(`memory quantity ${quantity} is not in Mi or Gi`);
      return Number(match[1]) * (match[2] === 'Gi' ? 1024 : 1);
    };
    const limit = mib(container.resources?.limits?.memory);
    const budget = budgets[0] ?? 0;
    // At most 3/4 of the limit: Node, the code and the modules take ~65 MB of RSS off the heap before any
    // work (bench/results.md), and the sockets' and JSON's buffers come on top.
    expect(budget).toBeLessThanOrEqual(limit * 0.75);
    // Above the request, which covers the idle footprint: a budget below it would fail before the node
    // ran short.
    expect(budget).toBeGreaterThan(mib(container.resources?.requests?.memory));
  });

  it('runs non-root on a read-only filesystem, without privileges, with a writable /tmp', () => {
    expect(container.securityContext).toMatchObject({
      runAsNonRoot: true,
      runAsUser: 65532,
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
    const tmp = container.volumeMounts?.find((m) => m.mountPath === '/tmp');
    expect(pod.volumes?.find((v) => v.name === tmp?.name)?.emptyDir).toBeDefined();
  });

  it('spreads its replicas over nodes, without requiring it', () => {
    const preferred = pod.affinity?.podAntiAffinity?.preferredDuringSchedulingIgnoredDuringExecution ?? [];
    expect(preferred.length + (pod.topologySpreadConstraints?.length ?? 0)).toBeGreaterThan(0);
    expect(JSON.stringify(pod.affinity)).toContain('kubernetes.io/hostname');
    expect(JSON.stringify(pod.affinity)).not.toContain('requiredDuringScheduling');
  });

  it('a PodDisruptionBudget keeps one replica and a Service exposes the metrics port', () => {
    const labels = deployment.spec.template.metadata.labels;
    const pdb = one<{ spec: { minAvailable: number; selector: { matchLabels: Record<string, string> } } }>(
      'PodDisruptionBudget',
    );
    expect(pdb.spec.minAvailable).toBe(1);
    expect(pdb.spec.minAvailable).toBeLessThan(deployment.spec.replicas);
    expect(matches(pdb.spec.selector.matchLabels, labels)).toBe(true);
    const service = one<{
      spec: { selector: Record<string, string>; ports: Array<{ port: number; targetPort: string | number }> };
    }>('Service');
    expect(matches(service.spec.selector, labels)).toBe(true);
    expect(service.spec.ports).toContainEqual(expect.objectContaining({ port: 8080, targetPort: 'metrics' }));
  });
});

// ---------------------------------------------------------------------------------------------
// deploy/overlays/namespaced: the same operator, watching a list of namespaces with Roles only there.

const OVERLAY = join(DEPLOY, 'overlays/namespaced');
const overlayFiles: string[] = [];
const overlay = build(OVERLAY, overlayFiles).map((i) => i.object);
const inOverlay = (kind: string) => overlay.filter((o) => o.kind === kind);
const idOf = (o: Obj) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
const CLASSES_RULE: Rule = {
  apiGroups: ['pgfsm.io'],
  resources: ['postgresclusterclasses'],
  verbs: ['get', 'list', 'watch', 'patch'],
};
const baseClusterRole = one<{ rules: Rule[] }>('ClusterRole', 'pgfsm');
const overlayDeployment = inOverlay('Deployment')[0] as Obj & Deployment;
const overlayEnv = Object.fromEntries(
  (overlayDeployment.spec.template.spec.containers[0]?.env ?? []).flatMap((e) =>
    e.value !== undefined && e.name !== NODE_OPTIONS ? [[e.name, e.value]] : [],
  ),
);

describe('the namespaced overlay', () => {
  it('installs every file of its directory, and the base objects with no second copy', () => {
    const files = yamlFiles(OVERLAY).filter((f) => !f.endsWith('kustomization.yaml'));
    for (const file of files) expect(overlayFiles, `${relative(ROOT, file)} is not installed`).toContain(file);
    const ids = overlay.map(idOf);
    expect(new Set(ids).size, 'an object is installed twice').toBe(ids.length);
    expect(ids).toEqual(expect.arrayContaining(objects.map(idOf)));
  });

  it('tells the operator to watch team-a and team-b, as pgfsm run parses it', async () => {
    expect(watchedNamespaces(await parseRun(overlayEnv))).toEqual(['team-a', 'team-b']);
    // Nothing else about the Deployment changes.
    const { env: _, ...container } = overlayDeployment.spec.template.spec.containers[0] as Container;
    const { env: __, ...baseContainer } = pod.containers[0] as Container;
    expect(container).toEqual(baseContainer);
    // The base's variables, NODE_OPTIONS among them, then the overlay's.
    const baseEnv = (pod.containers[0]?.env ?? []).map((e) => e.name);
    expect((overlayDeployment.spec.template.spec.containers[0]?.env ?? []).map((e) => e.name)).toEqual([
      ...baseEnv,
      'PGFSM_NAMESPACE',
    ]);
  });

  it('grants nothing cluster-wide but the classes (reading them, their finalizer)', () => {
    const clusterRoles = inOverlay('ClusterRole') as Array<Obj & { rules: Rule[] }>;
    for (const role of clusterRoles) expect(role.rules, role.metadata.name).toEqual([CLASSES_RULE]);
    for (const binding of inOverlay('ClusterRoleBinding') as Array<Obj & Binding>) {
      expect(binding.roleRef.kind).toBe('ClusterRole');
      expect(clusterRoles.map((r) => r.metadata.name)).toContain(binding.roleRef.name);
    }
  });

  it('has one Role per watched namespace with the cluster-wide rules but the classes, bound to the operator', async () => {
    const watched = watchedNamespaces(await parseRun(overlayEnv)) ?? [];
    const expected = baseClusterRole.rules.filter((r) => !r.resources.includes('postgresclusterclasses'));
    expect(expected.length).toBe(baseClusterRole.rules.length - 1);
    const roles = (inOverlay('Role') as Array<Obj & { rules: Rule[] }>).filter((r) => r.metadata.name === 'pgfsm');
    expect(roles.map((r) => r.metadata.namespace).sort()).toEqual([...watched].sort());
    for (const role of roles) expect(role.rules, role.metadata.namespace).toEqual(expected);
    const subject = { kind: 'ServiceAccount', name: pod.serviceAccountName, namespace: deployment.metadata.namespace };
    for (const namespace of watched) {
      const binding = (inOverlay('RoleBinding') as Array<Obj & Binding>).find(
        (b) => b.metadata.namespace === namespace && b.roleRef.name === 'pgfsm',
      );
      expect(binding?.roleRef.kind, namespace).toBe('Role');
      expect(binding?.subjects).toEqual([subject]);
    }
  });

  it('keeps every other object of the base as it is (the leader-election Role among them)', () => {
    const changed = new Set(['ClusterRole//pgfsm', idOf(deployment)]);
    const byId = new Map(overlay.map((o) => [idOf(o), o]));
    for (const object of objects) {
      if (changed.has(idOf(object))) continue;
      expect(byId.get(idOf(object)), idOf(object)).toEqual(object);
    }
  });
});

describe('graceful shutdown', () => {
  afterEach(() => {
    vi.useRealTimers();
    vi.restoreAllMocks();
  });

  it('the operator forces its exit before terminationGracePeriodSeconds ends', () => {
    const grace = pod.terminationGracePeriodSeconds ?? 30;
    expect(grace).toBe(30);
    vi.useFakeTimers();
    const exit = vi.spyOn(process, 'exit').mockImplementation((() => undefined) as never);
    const signals = ['SIGTERM', 'SIGINT'] as const;
    const before = Object.fromEntries(signals.map((s) => [s, new Set(process.listeners(s))]));
    const log = { info: () => {}, warn: () => {}, error: () => {} };
    // An operator whose passes never finish: only the forced exit can end the process.
    stopOnSignals({ stop: () => new Promise<void>(() => {}) }, log as never);
    const added = signals
      .flatMap((s) => process.listeners(s).map((l) => [s, l] as const))
      .filter(([s, l]) => !before[s]?.has(l));
    try {
      for (const [signal, listener] of added) if (signal === 'SIGTERM') listener('SIGTERM');
      // The exit comes at least 5 s before the kubelet's SIGKILL.
      vi.advanceTimersByTime((grace - 5) * 1000);
      expect(exit).toHaveBeenCalledWith(1);
    } finally {
      for (const [signal, listener] of added) process.removeListener(signal, listener);
    }
  });
});

// ---------------------------------------------------------------------------------------------
// The Dockerfile

interface Instruction {
  keyword: string;
  args: string;
  /** Index of the build stage (FROM) it belongs to. */
  stage: number;
}

/** Instructions with continuation lines joined and comments dropped. */
function parseDockerfile(text: string): Instruction[] {
  const instructions: Instruction[] = [];
  let stage = -1;
  let pending = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (pending === '' && (line === '' || line.startsWith('#'))) continue;
    if (line.startsWith('#')) continue;
    pending += `${line.replace(/\\$/, '').trim()} `;
    if (line.endsWith('\\')) continue;
    const [keyword = '', ...rest] = pending.trim().split(/\s+/);
    const args = rest.join(' ');
    if (keyword.toUpperCase() === 'FROM') stage++;
    instructions.push({ keyword: keyword.toUpperCase(), args, stage });
    pending = '';
  }
  return instructions;
}

const DOCKERFILE = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
const PACKAGE = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  scripts: Record<string, string>;
  dependencies: Record<string, string>;
};
const BUILD = (
  JSON.parse(readFileSync(join(ROOT, 'tsconfig.build.json'), 'utf8')) as {
    compilerOptions: { outDir: string; rootDir: string };
  }
).compilerOptions;
/** Where `npm run build` writes the JavaScript of a source file (relative to the package root). */
const emitted = (source: string) =>
  join(BUILD.outDir, relative(join(ROOT, BUILD.rootDir), join(ROOT, source))).replace(/\.ts$/, '.js');
const instructions = parseDockerfile(DOCKERFILE);
const stages = instructions.filter((i) => i.keyword === 'FROM');
const lastStage = stages.length - 1;
const inStage = (stage: number, keyword: string) =>
  instructions.filter((i) => i.stage === stage && i.keyword === keyword);
const dockerignore = readFileSync(join(ROOT, '.dockerignore'), 'utf8')
  .split('\n')
  .map((l) => l.trim())
  .filter((l) => l && !l.startsWith('#'));

/** Sources and destination of a COPY, without its flags. */
function copyParts(args: string): { from?: string; sources: string[]; destination: string } {
  const words = args.split(/\s+/);
  const from = words.find((w) => w.startsWith('--from='))?.slice('--from='.length);
  const paths = words.filter((w) => !w.startsWith('--'));
  return { ...(from ? { from } : {}), sources: paths.slice(0, -1), destination: paths.at(-1) ?? '' };
}

describe('Dockerfile', () => {
  it('says at the top how it is built where there is no Docker engine, and where it runs', () => {
    const header = DOCKERFILE.split('\n').slice(0, 16).join('\n');
    expect(header).toMatch(/without a Docker engine/);
    expect(header).toMatch(/buildah/);
    expect(header).toMatch(/test\/e2e\//);
  });

  it('is multi-stage, on Node.js 20 in every stage', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    for (const from of stages) expect(from.args, from.args).toMatch(/(^|\/)(node:20[-.\w]*|nodejs20-[\w.:-]+)/);
    expect(stages[0]?.args).toMatch(/ AS \w+/i);
  });

  it('runs the final stage as the non-root user 65532', () => {
    const users = inStage(lastStage, 'USER');
    expect(users.at(-1)?.args).toMatch(/^65532(:65532)?$/);
  });

  it("runs the compiled CLI that `npm run build` writes, with XState's production build", () => {
    const entrypoint = JSON.parse(inStage(lastStage, 'ENTRYPOINT').at(-1)?.args ?? '[]') as string[];
    const cmd = JSON.parse(inStage(lastStage, 'CMD').at(-1)?.args ?? '[]') as string[];
    expect(entrypoint[0]).toMatch(/(^|\/)node$/);
    // No node flags: no `--conditions=development` (the tests run that build, vitest.config.ts), no tsx.
    expect(entrypoint.slice(1)).toEqual([emitted('src/operator/cli/main.ts')]);
    expect(cmd).toEqual(['run']);
    // distroless puts node in /nodejs/bin; the official image has it on the PATH.
    if (stages[lastStage]?.args.includes('distroless')) expect(entrypoint[0]).toBe('/nodejs/bin/node');
    // The build stage's smoke test loads the CLI the same way, and nothing else in the file asks for that build.
    const smoke = inStage(0, 'RUN').at(-1)?.args ?? '';
    expect(smoke).toContain(`node ${emitted('src/operator/cli/main.ts')} run --help`);
    expect(DOCKERFILE.split('\n').filter((l) => !l.startsWith('#'))).not.toContainEqual(
      expect.stringMatching(/--conditions/),
    );
  });

  it('compiles in the build stage, then drops the dev dependencies (the compiler and tsx among them)', () => {
    expect(PACKAGE.scripts.build).toMatch(/tsc -p tsconfig\.build\.json/);
    const runs = inStage(0, 'RUN').map((i) => i.args);
    const build = runs.findIndex((r) => /npm run build/.test(r));
    const prune = runs.findIndex((r) => /npm prune --omit=dev/.test(r));
    expect(build).toBeGreaterThanOrEqual(0);
    expect(prune).toBeGreaterThanOrEqual(build);
    expect(runs[prune]?.indexOf('npm prune')).toBeGreaterThan(runs[prune]?.indexOf('npm run build') ?? -1);
    for (const tool of ['tsx', 'typescript']) expect(PACKAGE.dependencies).not.toHaveProperty(tool);
    expect(DOCKERFILE).not.toMatch(/TSX_|--import tsx/);
  });

  it('copies only the sources the CLI needs, never secrets or the whole context', () => {
    const copies = instructions.filter((i) => i.keyword === 'COPY' || i.keyword === 'ADD');
    expect(instructions.filter((i) => i.keyword === 'ADD')).toEqual([]);
    const allowed = [
      'package.json',
      'package-lock.json',
      'tsconfig.json',
      'tsconfig.build.json',
      'machines',
      'src/operator',
    ];
    for (const copy of copies) {
      const { from, sources } = copyParts(copy.args);
      for (const source of sources) {
        expect(source, copy.args).not.toMatch(/^\.\/?$|\.env|\.npmrc|\.pem$|\.key$|id_rsa|kubeconfig|secret/i);
        if (from) continue;
        expect(allowed, `COPY ${source}`).toContain(source.replace(/^\.\//, '').replace(/\/$/, ''));
        expect(existsSync(join(ROOT, source)), `COPY ${source}`).toBe(true);
      }
    }
    expect(DOCKERFILE).not.toMatch(/--mount=type=secret|ARG\s+\w*(TOKEN|PASSWORD|SECRET)/i);
  });

  it('the runtime stage takes from the build stage only what the build stage has', () => {
    const name = /\sAS\s+(\S+)/i.exec(stages[0]?.args ?? '')?.[1];
    const built = new Set(['/app/node_modules']);
    if (inStage(0, 'RUN').some((i) => /npm run build/.test(i.args))) built.add(join('/app', BUILD.outDir));
    for (const copy of inStage(0, 'COPY')) {
      const { sources, destination } = copyParts(copy.args);
      for (const source of sources) {
        const target = destination.endsWith('/') ? `${destination}${source}` : destination;
        built.add(join('/app', target.replace(/^\.\//, '')).replace(/\/$/, ''));
      }
    }
    for (const copy of inStage(lastStage, 'COPY')) {
      const { from, sources } = copyParts(copy.args);
      expect(from, copy.args).toBe(name);
      for (const source of sources) expect([...built], copy.args).toContain(source);
    }
  });

  it('exposes the metrics port the Deployment probes', () => {
    expect(inStage(lastStage, 'EXPOSE').map((i) => i.args)).toContain('8080');
  });

  it('.dockerignore keeps node_modules, .git and secrets out, and nothing the Dockerfile copies', () => {
    for (const required of ['node_modules', '.git', '.env', '.npmrc']) expect(dockerignore).toContain(required);
    const copied = instructions
      .filter((i) => i.keyword === 'COPY' && !i.args.includes('--from='))
      .flatMap((i) => copyParts(i.args).sources.map((s) => s.replace(/^\.\//, '').replace(/\/$/, '')));
    for (const path of copied) {
      expect(dockerignore, `${path} is copied but ignored`).not.toContain(path);
      expect(dockerignore, `${path} is copied but ignored`).not.toContain(`${dirname(path)}/`);
    }
  });
});

// ---------------------------------------------------------------------------------------------

const RUN_ENV = runOptions().flatMap((o) => (o.env ? [o.env] : []));

afterEach(() => {
  delete process.env.POD_NAMESPACE;
});

/** `pgfsm run` parsed with the given environment and no flags, without running the operator. */
async function parseRun(variables: Record<string, string>): Promise<RunOptions> {
  const saved = Object.fromEntries(RUN_ENV.map((name) => [name, process.env[name]]));
  for (const name of RUN_ENV) delete process.env[name];
  Object.assign(process.env, variables);
  try {
    const program = new Command().exitOverride();
    let parsed: RunOptions | undefined;
    registerRun(program)
      .exitOverride()
      .configureOutput({ writeErr: () => {} })
      .action((options: RunOptions) => {
        parsed = options;
      });
    await program.parseAsync(['node', 'pgfsm', 'run']);
    if (!parsed) throw new Error('action not called');
    return parsed;
  } finally {
    for (const name of RUN_ENV) {
      const value = saved[name];
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
}
