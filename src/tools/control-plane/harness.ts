/**
 * Starts a real, throw-away Kubernetes control plane on 127.0.0.1: etcd, kube-apiserver, (when available)
 * kube-controller-manager running only the garbage-collector and namespace controllers, and (by default)
 * CloudNativePG's operator with its real CRDs and admission webhooks (see cnpg.ts).
 *
 * What the API server is configured for, and why:
 * - RBAC authorization, so tests can prove the operator's Role/ClusterRole is sufficient and not more;
 * - client-certificate auth for the admin identity (group system:masters bypasses RBAC for test setup);
 * - real service-account token signing, so the TokenRequest API mints tokens the server actually verifies;
 * - loopback only: bind, advertise and etcd all on 127.0.0.1, and no endpoint reconciler, so nothing ever
 *   publishes or dials another address;
 * - the ServiceAccount admission plugin off, because without the serviceaccount controller no namespace gets a
 *   `default` ServiceAccount and every Pod would be rejected.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig, VersionApi } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { type Binaries, CNPG_VERSION, ensureBinaries, MissingBinariesError } from './build.ts';
import { createPki, type Pki } from './certs.ts';
import { type RunningCnpg, startCnpg } from './cnpg.ts';
import { type Log, stderrLog } from './log.ts';
import { freePorts } from './ports.ts';
import { get } from './probe.ts';
import { type ManagedProcess, registerExitCleanup, startProcess, waitUntil } from './processes.ts';

export interface StartControlPlaneOptions {
  /** Binaries to run; default: {@link ensureBinaries} (which may build them the first time). */
  binaries?: Binaries;
  /**
   * Run kube-controller-manager (garbage collector + namespace controller). Default true; it is silently
   * absent only when the binaries came from envtest-style assets that lack it (see `controllerManager` on
   * the result).
   */
  controllerManager?: boolean;
  /**
   * Run CloudNativePG (CNPG_VERSION: v1.30.1 unless PGFSM_CNPG_VERSION picks another) with it: its real CRDs, its mutating and validating webhooks registered for the
   * whole cluster, and its controllers acting in namespace `cnpg-controlled` only. Default true.
   */
  cnpg?: boolean;
  /** Per-component readiness timeout; default `$PGFSM_CONTROL_PLANE_START_TIMEOUT` ms or 120 s (2 slow cores). */
  startTimeoutMs?: number;
  /**
   * Also tear down on SIGINT/SIGTERM/SIGHUP (then re-raise the signal). Default true. The CLI turns it off
   * because it handles Ctrl-C itself with a graceful stop.
   */
  handleSignals?: boolean;
  /** Extra kube-apiserver flags, appended last so they win (tests use them to provoke rare server behaviour). */
  apiServerArgs?: string[];
  /**
   * Opt-in audit log: the API server writes one JSON line per request stage the policy selects to
   * `auditLogPath` (see the result), so a caller can count requests where they arrive rather than trust a
   * client's own counter. Off by default: auditing costs the API server CPU. The policy is an audit.k8s.io/v1
   * Policy object; {@link auditPolicyFor} makes one at level Metadata for some users only.
   */
  audit?: { policy: object };
  log?: Log;
}

export interface ServiceAccountRef {
  namespace: string;
  name: string;
}

export interface TokenOptions {
  expirationSeconds?: number;
  /** Default: the API server's own audience. */
  audiences?: string[];
}

export interface ControlPlane {
  /** `https://127.0.0.1:<port>` */
  readonly url: string;
  /** Admin kubeconfig (client certificate in system:masters); deleted by `stop()`. */
  readonly kubeconfigPath: string;
  readonly kubeConfig: KubeConfig;
  /** `gitVersion` reported by the running API server, e.g. `v1.36.3`. */
  readonly serverVersion: string;
  readonly binaries: Binaries;
  /** Whether kube-controller-manager runs (ownerReference GC and namespace deletion really happen). */
  readonly controllerManager: boolean;
  /** CloudNativePG, when it runs (the default): version, watched namespace, webhook address, its CRDs. */
  readonly cnpg?: RunningCnpg;
  /** Temp directory holding certificates, etcd data, logs and the kubeconfig. */
  readonly dir: string;
  /** With the `audit` option: the API server's audit log (JSON lines), inside `dir`, gone after `stop()`. */
  readonly auditLogPath?: string;
  /** Process ids of the running servers (each is the leader of its own process group). */
  readonly pids: Readonly<Record<string, number>>;
  /** Mints a real, signed token for an existing ServiceAccount via the TokenRequest API. */
  tokenFor(serviceAccount: ServiceAccountRef | `${string}/${string}`, options?: TokenOptions): Promise<string>;
  /** A KubeConfig for the same cluster that authenticates with a bearer token (e.g. from `tokenFor`). */
  kubeConfigForToken(token: string): KubeConfig;
  /** Stops every process and deletes `dir`. Safe to call more than once. */
  stop(): Promise<void>;
}

const SERVICE_ACCOUNT_ISSUER = 'https://kubernetes.default.svc.cluster.local';

/** tmpfs when there is room: etcd's WAL writes are the main start-up and test-time I/O cost. */
function tempBase(): string {
  const explicit = process.env.PGFSM_CONTROL_PLANE_TMPDIR;
  if (explicit) return explicit;
  try {
    const fs = statfsSync('/dev/shm');
    if (fs.bavail * fs.bsize > 1024 ** 3) return '/dev/shm';
  } catch {
    // no /dev/shm
  }
  return tmpdir();
}

function defaultTimeout(): number {
  const fromEnv = Number(process.env.PGFSM_CONTROL_PLANE_START_TIMEOUT);
  return Number.isFinite(fromEnv) && fromEnv > 0 ? fromEnv : 120_000;
}

/** Child environment without variables that would reconfigure the servers behind our back. */
function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith('ETCD_') && key !== 'KUBECONFIG') env[key] = value;
  }
  return env;
}

const b64 = (file: string) => readFileSync(file).toString('base64');

function adminKubeConfig(url: string, pki: Pki): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'pgfsm-test', server: url, caData: b64(pki.caCert), skipTLSVerify: false }],
    users: [{ name: 'admin', certData: b64(pki.adminCert), keyData: b64(pki.adminKey) }],
    contexts: [{ name: 'pgfsm-test', cluster: 'pgfsm-test', user: 'admin' }],
    currentContext: 'pgfsm-test',
  });
  return kc;
}

function tokenKubeConfig(url: string, pki: Pki, token: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'pgfsm-test', server: url, caData: b64(pki.caCert), skipTLSVerify: false }],
    users: [{ name: 'token', token }],
    contexts: [{ name: 'pgfsm-test', cluster: 'pgfsm-test', user: 'token' }],
    currentContext: 'pgfsm-test',
  });
  return kc;
}

export async function startControlPlane(options: StartControlPlaneOptions = {}): Promise<ControlPlane> {
  const log = options.log ?? stderrLog;
  const timeoutMs = options.startTimeoutMs ?? defaultTimeout();
  const wantKcm = options.controllerManager ?? true;
  const wantCnpg = options.cnpg ?? true;
  const binaries = options.binaries ?? (await ensureBinaries({ controllerManager: wantKcm, cnpg: wantCnpg, log }));
  const kcmBinary = wantKcm ? binaries.kubeControllerManager : undefined;
  if (wantCnpg && !binaries.cnpg) {
    throw new MissingBinariesError(
      'startControlPlane({ cnpg: true }) was given binaries without CloudNativePG; ' +
        'get them from ensureBinaries({ cnpg: true }), or pass cnpg: false.',
    );
  }

  const dir = mkdtempSync(join(tempBase(), 'pgfsm-cp-'));
  const logs = join(dir, 'logs');
  mkdirSync(logs);
  const running: ManagedProcess[] = [];
  // Synchronous last resort if the process ends before stop() ran.
  const unregister = registerExitCleanup(
    () => {
      for (const proc of running) proc.killNow();
      rmSync(dir, { recursive: true, force: true });
    },
    { onSignals: options.handleSignals ?? true },
  );

  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      // Reverse start order: controllers first, etcd last, so nobody logs errors about a vanished backend.
      for (const proc of [...running].reverse()) await proc.stop();
      rmSync(dir, { recursive: true, force: true });
      unregister();
    })();
    return stopping;
  };

  try {
    const started = Date.now();
    const pki = await createPki(join(dir, 'pki'));
    const [etcdPort, etcdPeerPort, apiPort, kcmPort] = await freePorts(4);
    const env = cleanEnv();

    const etcdUrl = `http://127.0.0.1:${etcdPort}`;
    const peerUrl = `http://127.0.0.1:${etcdPeerPort}`;
    const etcdData = join(dir, 'etcd');
    const etcd = startProcess({
      name: 'etcd',
      command: binaries.etcd,
      args: [
        '--name=pgfsm-test',
        `--data-dir=${etcdData}`,
        `--listen-client-urls=${etcdUrl}`,
        `--advertise-client-urls=${etcdUrl}`,
        `--listen-peer-urls=${peerUrl}`,
        `--initial-advertise-peer-urls=${peerUrl}`,
        `--initial-cluster=pgfsm-test=${peerUrl}`,
        // Test data is disposable; skipping fsync makes writes cheap.
        '--unsafe-no-fsync=true',
        '--log-level=warn',
      ],
      logFile: join(logs, 'etcd.log'),
      env,
      removeOnCrash: dir,
    });
    running.push(etcd);
    await waitUntil(
      `etcd ${etcdUrl}/health`,
      async () => {
        const res = await get(`${etcdUrl}/health`);
        return res.status === 200 && (JSON.parse(res.body) as { health?: string }).health === 'true';
      },
      { timeoutMs, watch: [etcd] },
    );
    log(`etcd ${binaries.versions.etcd} ready at ${etcdUrl} (pid ${etcd.pid})`);

    const url = `https://127.0.0.1:${apiPort}`;
    let auditLogPath: string | undefined;
    const auditArgs: string[] = [];
    if (options.audit) {
      const policyPath = join(dir, 'audit-policy.yaml');
      writeFileSync(policyPath, stringify(options.audit.policy));
      auditLogPath = join(logs, 'audit.log');
      auditArgs.push(
        `--audit-policy-file=${policyPath}`,
        `--audit-log-path=${auditLogPath}`,
        // One file, never rotated, so a reader's offset stays valid; the whole log goes with `dir`.
        '--audit-log-maxsize=0',
        // Blocking: each line is written while its request is handled, none held in a buffer or dropped under
        // load (batch mode buffers lines and may drop some), so a count taken shortly after a request is whole.
        '--audit-log-mode=blocking',
      );
    }
    const apiserver = startProcess({
      name: 'kube-apiserver',
      command: binaries.kubeApiserver,
      args: [
        `--etcd-servers=${etcdUrl}`,
        '--bind-address=127.0.0.1',
        `--secure-port=${apiPort}`,
        '--advertise-address=127.0.0.1',
        '--endpoint-reconciler-type=none',
        `--cert-dir=${pki.dir}`,
        `--tls-cert-file=${pki.serverCert}`,
        `--tls-private-key-file=${pki.serverKey}`,
        `--client-ca-file=${pki.caCert}`,
        '--authorization-mode=RBAC',
        `--service-account-issuer=${SERVICE_ACCOUNT_ISSUER}`,
        `--service-account-key-file=${pki.serviceAccountPublicKey}`,
        `--service-account-signing-key-file=${pki.serviceAccountKey}`,
        '--service-cluster-ip-range=10.0.0.0/24',
        '--allow-privileged=true',
        '--disable-admission-plugins=ServiceAccount',
        // Flow control only adds overhead (and possible 429s) on a 2-core test machine.
        '--enable-priority-and-fairness=false',
        '--profiling=false',
        ...auditArgs,
        ...(options.apiServerArgs ?? []),
      ],
      logFile: join(logs, 'kube-apiserver.log'),
      env,
    });
    running.push(apiserver);
    const adminTls = {
      ca: readFileSync(pki.caCert),
      cert: readFileSync(pki.adminCert),
      key: readFileSync(pki.adminKey),
    };
    await waitUntil(
      `kube-apiserver ${url}/readyz`,
      async () => {
        const res = await get(`${url}/readyz`, adminTls);
        return res.status === 200 && res.body.trim() === 'ok';
      },
      { timeoutMs, watch: [etcd, apiserver] },
    );

    const kubeConfig = adminKubeConfig(url, pki);
    const kubeconfigPath = join(dir, 'kubeconfig');
    // exportConfig() gives JSON with the kubeconfig field names; YAML is friendlier for humans using kubectl.
    writeFileSync(kubeconfigPath, stringify(JSON.parse(kubeConfig.exportConfig())), { mode: 0o600 });
    const serverVersion = (await kubeConfig.makeApiClient(VersionApi).getCode()).gitVersion;
    log(`kube-apiserver ${serverVersion} ready at ${url} (pid ${apiserver.pid})`);

    if (kcmBinary) {
      const kcm = startProcess({
        name: 'kube-controller-manager',
        command: kcmBinary,
        args: [
          `--kubeconfig=${kubeconfigPath}`,
          `--authentication-kubeconfig=${kubeconfigPath}`,
          `--authorization-kubeconfig=${kubeconfigPath}`,
          // Only what makes deletion semantics real; nothing here schedules or runs workloads.
          '--controllers=garbage-collector-controller,namespace-controller',
          '--leader-elect=false',
          '--use-service-account-credentials=false',
          '--bind-address=127.0.0.1',
          `--secure-port=${kcmPort}`,
          `--cert-dir=${join(dir, 'kcm')}`,
          '--profiling=false',
        ],
        logFile: join(logs, 'kube-controller-manager.log'),
        env,
      });
      running.push(kcm);
      await waitUntil(
        `kube-controller-manager https://127.0.0.1:${kcmPort}/healthz`,
        async () => (await get(`https://127.0.0.1:${kcmPort}/healthz`, { insecure: true })).status === 200,
        { timeoutMs, watch: [etcd, apiserver, kcm] },
      );
      log(`kube-controller-manager ready (pid ${kcm.pid}): garbage-collector and namespace controllers`);
    }
    let cnpg: RunningCnpg | undefined;
    if (wantCnpg && binaries.cnpg) {
      cnpg = await startCnpg({
        assets: binaries.cnpg,
        version: binaries.versions.cnpg ?? CNPG_VERSION,
        pki,
        dir,
        kubeconfigPath,
        kubeConfig,
        env,
        timeoutMs,
        log,
        onProcess: (proc) => running.push(proc),
        watch: [etcd, apiserver],
      });
    }
    log(`control plane up in ${((Date.now() - started) / 1000).toFixed(1)}s; kubeconfig: ${kubeconfigPath}`);

    const core = kubeConfig.makeApiClient(CoreV1Api);
    return {
      url,
      kubeconfigPath,
      kubeConfig,
      serverVersion,
      binaries,
      controllerManager: kcmBinary !== undefined,
      ...(cnpg ? { cnpg } : {}),
      ...(auditLogPath ? { auditLogPath } : {}),
      dir,
      pids: Object.fromEntries(running.map((p) => [p.name, p.pid])),
      async tokenFor(serviceAccount, tokenOptions = {}) {
        const ref: ServiceAccountRef =
          typeof serviceAccount === 'string' ? parseServiceAccount(serviceAccount) : serviceAccount;
        const request = await core.createNamespacedServiceAccountToken({
          name: ref.name,
          namespace: ref.namespace,
          body: {
            spec: {
              audiences: tokenOptions.audiences ?? [],
              expirationSeconds: tokenOptions.expirationSeconds ?? 3600,
            },
          },
        });
        const token = request.status?.token;
        if (!token) throw new Error(`TokenRequest for ${ref.namespace}/${ref.name} returned no token`);
        return token;
      },
      kubeConfigForToken: (token) => tokenKubeConfig(url, pki, token),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * An audit policy that records every request of `users` at level Metadata (verb, resource, name, response
 * code, timestamps; never a request or response body, so no Secret's value) and nothing of anyone else.
 * RequestReceived is omitted: each request then has one line (ResponseComplete), or two for a watch
 * (ResponseStarted when it opens, ResponseComplete when it ends); count distinct `auditID`s. `moreRules`
 * record something else as well (the bench: another client's writes of one resource, for their timestamps).
 */
export function auditPolicyFor(users: readonly string[], moreRules: readonly object[] = []): object {
  return {
    apiVersion: 'audit.k8s.io/v1',
    kind: 'Policy',
    omitStages: ['RequestReceived'],
    // `moreRules` (audit.k8s.io/v1 PolicyRules) come before the final rule that drops everything else.
    rules: [{ level: 'Metadata', users: [...users] }, ...moreRules, { level: 'None' }],
  };
}

/** The username the API server gives a ServiceAccount's tokens, as audit entries and RBAC name it. */
export const serviceAccountUser = (ref: ServiceAccountRef) => `system:serviceaccount:${ref.namespace}:${ref.name}`;

function parseServiceAccount(ref: string): ServiceAccountRef {
  const [namespace, name, ...rest] = ref.split('/');
  if (!namespace || !name || rest.length > 0) throw new Error(`expected "namespace/name", got "${ref}"`);
  return { namespace, name };
}

/**
 * One line naming what runs, for test output: `kube-apiserver v1.36.3 at https://127.0.0.1:…, CloudNativePG
 * v1.30.1 webhooks active`.
 */
export function describeControlPlane(cp: ControlPlane): string {
  const cnpg = cp.cnpg ? `, CloudNativePG ${cp.cnpg.version} webhooks active` : ', no CloudNativePG';
  return `kube-apiserver ${cp.serverVersion} at ${cp.url}${cnpg}`;
}

/** Runs `fn` against a fresh control plane and always tears it down, whatever `fn` does. */
export async function withControlPlane<T>(
  fn: (controlPlane: ControlPlane) => Promise<T>,
  options: StartControlPlaneOptions = {},
): Promise<T> {
  const controlPlane = await startControlPlane(options);
  try {
    return await fn(controlPlane);
  } finally {
    await controlPlane.stop();
  }
}
