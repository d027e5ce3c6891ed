/** What to try once the examples are Ready: copy-pasteable commands, for a person in another terminal. */
import type { PostgresDatabase } from '../../operator/api/schema.ts';
import { secretNameOf } from '../../operator/domain/database/roles.ts';
import { COMMAND_HELP } from './commands.ts';
import type { Style } from './output.ts';
import { keyOf } from './progress.ts';
import { SWITCHOVER_ANNOTATION } from './switchover.ts';

export interface HintContext {
  /** The sandbox's own kubeconfig; absent when running against the user's current context. */
  kubeconfig?: string;
  namespace: string;
  metricsUrl: string;
  operatorLog: string;
  /** A simulated CNPG runs (switchover requests are served). */
  simulated: boolean;
}

export function hints(ctx: HintContext, style: Style): string[] {
  const ns = ctx.namespace;
  const comment = (s: string) => style.dim(`# ${s}`);
  const lines = [style.bold('Try it, in another terminal:'), ''];
  if (ctx.kubeconfig) lines.push(`  export KUBECONFIG=${ctx.kubeconfig}`, '');
  lines.push(
    `  ${comment('watch the clusters and their databases: state, phase, the Ready reason')}`,
    `  kubectl get postgresclusters -n ${ns} -o wide -w`,
    `  kubectl get postgresdatabases -n ${ns} -o wide`,
    `  kubectl describe postgrescluster -n ${ns} orders`,
    `  kubectl get events -n ${ns} --sort-by=.lastTimestamp`,
    '',
  );
  if (ctx.simulated) {
    lines.push(
      `  ${comment('CNPG switches over the primary of orders: Ready → Degraded → Ready')}`,
      `  kubectl annotate clusters.postgresql.cnpg.io -n ${ns} orders ${SWITCHOVER_ANNOTATION}="$(date +%s)" --overwrite`,
      `  npm run pgfsm -- sandbox switchover ${ns}/orders      ${comment('the same, with KUBECONFIG exported')}`,
      '',
      `  ${comment("CloudNativePG's own webhooks judge every Cluster: a reserved role name is refused in CNPG's words")}`,
      `  kubectl patch clusters.postgresql.cnpg.io -n ${ns} orders --type merge -p '{"spec":{"managed":{"roles":[{"name":"postgres"}]}}}'`,
      '',
    );
  }
  lines.push(
    `  ${comment('drift: change the endpoints ConfigMap, pgfsm puts it back within a second')}`,
    `  kubectl patch configmap -n ${ns} orders-endpoints --type merge -p '{"data":{"DEFAULT_CLUSTER_PORT":"1"}}'`,
    `  kubectl get configmap -n ${ns} orders-endpoints -o jsonpath='{.data.DEFAULT_CLUSTER_PORT}{"\\n"}'`,
    '',
    `  ${comment('delete with each policy: orders (Delete) takes its children along;')}`,
    `  ${comment('inventory (Retain, the default) leaves them, without owner, to be adopted again')}`,
    `  kubectl delete postgrescluster -n ${ns} orders`,
    `  kubectl delete postgrescluster -n ${ns} inventory`,
    `  kubectl get clusters.postgresql.cnpg.io,secrets,configmaps -n ${ns}`,
    `  kubectl apply -f examples/cluster-plain.yaml        ${comment('inventory again: adopts what was retained')}`,
    '',
    `  curl -s ${ctx.metricsUrl} | grep ^pgfsm_`,
    `  ${style.dim(`operator log: ${ctx.operatorLog}`)}`,
    '',
  );
  if (ctx.simulated) {
    lines.push(style.bold('Or type here:'), ...COMMAND_HELP.map((h) => `  ${h}`));
  } else {
    lines.push(style.bold('Or type here:'), ...COMMAND_HELP.filter((h) => !h.startsWith('s ')).map((h) => `  ${h}`));
  }
  lines.push(
    '',
    style.dim('Ctrl-C stops the operator, the simulator and the control plane, and removes every temp file.'),
  );
  return lines;
}

/** The connection Secret of a database's owner: as its status names it, else by the naming rule. */
export const ownerSecretOf = (database: PostgresDatabase) =>
  database.status?.secrets?.find((s) => s.access === 'owner')?.secretName ??
  secretNameOf(database.metadata.name, database.spec.owner);

/** `kubectl get secret … {.data.uri} | base64 -d`: the connection string, which holds the password, printed by kubectl. */
export const uriCommand = (kubectl: string, namespace: string, secret: string) =>
  `${kubectl} get secret -n ${namespace} ${secret} -o jsonpath='{.data.uri}' | base64 -d`;

/**
 * Where each database's connection string is, with CNPG simulated: no PostgreSQL answers at the address it
 * names, so there is no command to connect, only the Secret an application would be given.
 */
export function simulatedConnections(
  databases: Array<PostgresDatabase | undefined>,
  kubeconfig: string | undefined,
  style: Style,
): string[] {
  const present = databases.filter((d): d is PostgresDatabase => d !== undefined);
  if (present.length === 0) return [];
  const lines = [
    style.bold(
      'Connection strings (PostgreSQL is simulated here: nothing answers at the hosts they name, and the grants ' +
        "were recorded, not run). Each is the uri of the owner's Secret, as an application is given it:",
    ),
    '',
  ];
  if (kubeconfig) lines.push(`  export KUBECONFIG=${kubeconfig}`);
  for (const database of present) {
    const { namespace } = database.metadata;
    const secret = ownerSecretOf(database);
    const users = (database.status?.secrets ?? []).filter((s) => s.access !== 'owner');
    const also = users.map((s) => `${s.user}, ${s.access}: ${s.secretName}`).join('; ');
    lines.push(
      style.dim(
        `  # ${keyOf(database)}: database ${database.spec.name}, owner ${database.spec.owner}: Secret ${namespace}/${secret}` +
          (also ? ` (${also})` : ''),
      ),
      `  ${uriCommand('kubectl', namespace, secret)}`,
    );
  }
  lines.push('');
  return lines;
}
