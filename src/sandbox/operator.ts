/**
 * The real pgfsm operator, in-process: the same adapters and driver `pgfsm run` wires, with its JSON log
 * going to a file (the terminal shows the clusters' progress instead) and a Lease like a deployed replica,
 * so that stopping releases it and a second operator would wait rather than race.
 */
import { createServer } from 'node:net';
import type { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { kubernetesPorts } from '../adapters/kubernetes/index.ts';
import { LeaseElector } from '../adapters/kubernetes/leader.ts';
import { createWatchSources } from '../adapters/kubernetes/watch-sources.ts';
import { defaultSettings } from '../domain/observation.ts';
import { createLogger, type Logger } from '../driver/logger.ts';
import { type RunningOperator, startOperator } from '../driver/operator.ts';

export const LEASE = { namespace: 'pgfsm-system', name: 'pgfsm-leader' };

/** The operator's log, to a file; the simulator and the sandbox's watches log there too. */
export function fileLogger(path: string, level = 'info'): Logger {
  return createLogger({ level, destination: pino.destination({ dest: path, sync: true, mkdir: true }) });
}

/** `port` on 127.0.0.1 when it is free, else 0 (the kernel picks one): a second sandbox still starts. */
export function portOr0(port: number): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(0));
    server.listen({ host: '127.0.0.1', port, exclusive: true }, () => server.close(() => resolve(port)));
  });
}

export interface SandboxOperator {
  operator: RunningOperator;
  identity: string;
  metricsUrl: string;
}

export async function startSandboxOperator(
  kc: KubeConfig,
  log: Logger,
  preferredPort = 8080,
): Promise<SandboxOperator> {
  const identity = `sandbox-${process.pid}`;
  const port = await portOr0(preferredPort);
  const operator = await startOperator({
    sources: createWatchSources(kc, { log }),
    ports: kubernetesPorts(kc, { reportingInstance: identity }),
    settings: defaultSettings,
    leadership: new LeaseElector(kc, { ...LEASE, identity, log }),
    workers: 2,
    metricsAddress: `127.0.0.1:${port}`,
    logger: log,
  });
  return { operator, identity, metricsUrl: `http://127.0.0.1:${operator.server.port}/metrics` };
}
