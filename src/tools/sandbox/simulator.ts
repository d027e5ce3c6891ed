/**
 * CNPG, simulated, against the sandbox's API server: phases and ready instances move on a wall clock
 * with delays a person can follow, and switchovers come on request (stdin or the annotation).
 */
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from '../../operator/driver/logger.ts';
import { CnpgSimulator, type SimulatorDelays } from '../simulation/cnpg-simulator.ts';
import { KubernetesSimulatorApi } from '../simulation/kubernetes-api.ts';
import { watchSwitchoverRequests } from './switchover.ts';

/** Slow enough to watch each step go by, quick enough that both examples are Ready in about half a minute. */
export const SANDBOX_DELAYS: SimulatorDelays = {
  firstPhaseMs: 1_000,
  primaryMs: 8_000,
  replicaMs: 4_000,
  configurationMs: 5_000,
  roleMs: 2_000,
  poolerMs: 4_000,
};

export const SWITCHOVER_MS = 6_000;

export interface SandboxSimulator {
  switchover(namespace: string, name: string): boolean;
  stop(): Promise<void>;
}

export async function startSimulator(
  kc: KubeConfig,
  log: Logger,
  onSwitchover: (namespace: string, name: string) => void,
  /** Namespaces where CNPG's real controller acts: the simulator leaves them alone. */
  ignoreNamespaces: readonly string[] = [],
): Promise<SandboxSimulator> {
  const api = new KubernetesSimulatorApi(kc, { log: log.child({ component: 'cnpg-simulator' }), ignoreNamespaces });
  await api.start();
  const simulator = new CnpgSimulator(api, { now: () => Date.now() }, SANDBOX_DELAYS);
  const ticker = setInterval(() => simulator.advance(), 100);
  const switchover = (namespace: string, name: string) => {
    if (!api.get({ kind: 'Cluster', namespace, name })) return false;
    simulator.switchover(namespace, name, SWITCHOVER_MS);
    onSwitchover(namespace, name);
    return true;
  };
  const unwatch = watchSwitchoverRequests(api, switchover);
  return {
    switchover,
    async stop() {
      unwatch();
      clearInterval(ticker);
      simulator.stop();
      await api.stop();
    },
  };
}
