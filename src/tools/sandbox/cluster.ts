/**
 * The cluster the sandbox runs against, ready for the operator: the CRDs and the RBAC of deploy/ are
 * installed, and the operator has its identity.
 * - Local (the default): a throw-away control plane with CloudNativePG's real CRDs and admission webhooks
 *   (CNPG_VERSION of src/tools/control-plane/build.ts, built from its Go module); CNPG's controller is
 *   simulated (its real one acts only in a namespace of its own, which the simulator leaves alone); the operator authenticates as the pgfsm ServiceAccount, so
 *   the API server enforces deploy/rbac.
 * - The current kubeconfig context (opt-in, confirmed): real CloudNativePG must already be there, because a
 *   simulator has no place in a real cluster; the operator uses your credentials.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline/promises';
import type { KubeConfig } from '@kubernetes/client-node';
import { loadKubeConfig } from '../../operator/kubernetes/kubeconfig.ts';
import { startControlPlane } from '../control-plane/index.ts';
import {
  applyManifests,
  CNPG_CLUSTER_CRD,
  crdEstablished,
  installCrds,
  PGFSM_CRDS,
  RBAC_MANIFESTS,
  readManifests,
} from '../install/manifests.ts';
import type { Output } from './output.ts';
import { isYes, type TargetDecision, userKubeconfig } from './target.ts';
import type { Teardown } from './teardown.ts';

export interface Target {
  /** Sets up, applies the examples, watches the clusters. */
  admin: KubeConfig;
  /** How the operator process (`pgfsm run`) reaches the cluster, as its own identity. */
  operatorConnection: string[];
  /** Who the operator is, for the start-up line. */
  operatorIdentity: string;
  /** A kubeconfig file for kubectl, when the sandbox made one. */
  kubeconfigPath?: string;
  /** CNPG's controller is simulated (local control plane) rather than real. */
  simulated: boolean;
  /** Where CNPG's real controller acts, so the simulator must not (local control plane). */
  cnpgControllerNamespace?: string;
  /** pgfsm already runs in the cluster as its Deployment (the real node): no `pgfsm run` process is started. */
  operatorInCluster?: boolean;
}

/** The ends of a sandbox run that are not errors: a refusal, or a No. */
export class NotConfirmed extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

const OPERATOR_SERVICE_ACCOUNT = { namespace: 'pgfsm-system', name: 'pgfsm' };
/** The sandbox may run for a working day; the default hour would lock the operator out mid-session. */
const TOKEN_SECONDS = 24 * 3600;

export async function startLocalCluster(out: Output, teardown: Teardown): Promise<Target> {
  const ignored = userKubeconfig();
  if (ignored) out.detail(`not using ${ignored}: the sandbox runs its own control plane (see --use-current-context)`);
  out.step(
    'starting a local control plane (kube-apiserver, etcd, kube-controller-manager, CloudNativePG webhooks on 127.0.0.1)',
  );
  const cp = await startControlPlane({ handleSignals: false, log: (line) => out.detail(line) });
  const pids = Object.entries(cp.pids)
    .map(([name, pid]) => `${name} ${pid}`)
    .join(', ');
  teardown.add(`control plane stopped (${pids}); removed ${cp.dir}`, () => cp.stop());
  const admin = cp.kubeConfig;

  if (!cp.cnpg) throw new Error('the local control plane runs without CloudNativePG');
  out.detail(
    `CloudNativePG ${cp.cnpg.version}: its CRDs, and its webhooks judge every Cluster and Pooler; ` +
      `its controller acts only in namespace ${cp.cnpg.watchNamespace}, CNPG is simulated everywhere else`,
  );
  out.step('installing the pgfsm CRDs (deploy/crds) and the RBAC (deploy/rbac)');
  const crds = await installCrds(admin, PGFSM_CRDS, { apply: true });
  out.detail(crds.join(', '));
  await applyManifests(admin, readManifests(RBAC_MANIFESTS));
  const sa = OPERATOR_SERVICE_ACCOUNT;
  const token = await cp.tokenFor(sa, { expirationSeconds: TOKEN_SECONDS });
  // Beside the control plane's own files: private, and removed with them.
  const operatorKubeconfig = join(cp.dir, 'operator.kubeconfig');
  writeFileSync(operatorKubeconfig, cp.kubeConfigForToken(token).exportConfig(), { mode: 0o600 });
  return {
    admin,
    operatorConnection: ['--kubeconfig', operatorKubeconfig],
    operatorIdentity: `ServiceAccount ${sa.namespace}/${sa.name} (deploy/rbac enforced)`,
    kubeconfigPath: cp.kubeconfigPath,
    simulated: true,
    cnpgControllerNamespace: cp.cnpg.watchNamespace,
  };
}

async function confirm(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stdout });
  try {
    return isYes(await rl.question(question));
  } finally {
    rl.close();
  }
}

export async function connectCurrentContext(
  out: Output,
  teardown: Teardown,
  decision: Exclude<TargetDecision, 'local'>,
  context: string | undefined,
): Promise<Target> {
  // Only here, on request, is the user's kubeconfig read.
  const kc = loadKubeConfig(context ? { context } : {});
  out.step('using your kubeconfig (--use-current-context)');
  out.detail(`context  ${kc.getCurrentContext()}`);
  out.detail(`server   ${kc.getCurrentCluster()?.server}`);
  out.detail(`user     ${kc.getCurrentUser()?.name ?? '?'}`);
  out.detail(`from     ${userKubeconfig() ?? 'in-cluster service account'}`);
  out.line('This applies the pgfsm CRDs and RBAC (deploy/) and the examples (namespace team-a) to that cluster,');
  out.line('and runs the operator on this machine against it. Nothing is deleted when the sandbox stops.');
  if (decision === 'refuse') {
    throw new NotConfirmed(
      'Refusing to change this cluster without confirmation: stdin is not a terminal. Add --yes to confirm up front.',
      2,
    );
  }
  if (decision === 'ask' && !(await confirm('Proceed? [y/N] '))) throw new NotConfirmed('Nothing done.', 1);

  if (!(await crdEstablished(kc, CNPG_CLUSTER_CRD))) {
    throw new NotConfirmed(
      `CloudNativePG is not installed in this cluster (no ${CNPG_CLUSTER_CRD} CRD). Install it first, or run ` +
        'the sandbox without --use-current-context: its local control plane simulates CNPG.',
      1,
    );
  }
  // Added first, so reported last: what stays behind, and how to remove it.
  teardown.add(
    'left in the cluster: the CRDs, the RBAC, namespace team-a and the examples (to remove the clusters, ' +
      'kubectl delete -f examples/ --ignore-not-found while an operator runs: their finalizer needs one)',
    () => {},
  );
  out.step('applying the pgfsm CRDs (deploy/crds) and the RBAC (deploy/rbac)');
  out.detail((await installCrds(kc, PGFSM_CRDS, { apply: true })).join(', '));
  await applyManifests(kc, readManifests(RBAC_MANIFESTS));
  // The operator process reads the same kubeconfig (it inherits KUBECONFIG) with this context.
  return {
    admin: kc,
    operatorConnection: ['--context', kc.getCurrentContext()],
    operatorIdentity: 'your credentials',
    simulated: false,
  };
}
