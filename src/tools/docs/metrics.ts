/** The metrics pgfsm exports, read from the prom-client registry of a freshly built OperatorMetrics. */
import { OperatorMetrics } from '../../operator/driver/metrics.ts';
import { code, table } from './markdown.ts';

export interface MetricDoc {
  name: string;
  type: string;
  labels: string[];
  help: string;
}

/** The operator's own metrics, in registration order (without prom-client's process and Node.js defaults). */
export async function operatorMetrics(): Promise<MetricDoc[]> {
  const { registry } = new OperatorMetrics({ defaultMetrics: false, now: () => 0 });
  const metrics = await registry.getMetricsAsJSON();
  return metrics.map((m) => {
    const instance = registry.getSingleMetric(m.name) as unknown as { labelNames?: readonly string[] } | undefined;
    return { name: m.name, type: String(m.type), labels: [...(instance?.labelNames ?? [])], help: m.help };
  });
}

export function metricsTable(metrics: readonly MetricDoc[]): string {
  return table(
    ['Metric', 'Type', 'Labels', 'Meaning'],
    metrics.map((m) => [code(m.name), m.type, m.labels.map(code).join(', '), m.help]),
  );
}
