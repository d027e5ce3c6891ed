/**
 * Imported first (`node --import`) by the `pgfsm run` process of the simulated sandbox: there CNPG's controller
 * is simulated and no PostgreSQL runs, so the grants of a PostgresDatabase (the one step pgfsm itself takes over
 * SQL) would wait forever for a server. They are recorded instead (RecordingPrivileges, the memory tools' stand-in
 * privileges port) and logged, and the database goes on to Ready. Everything else is `pgfsm run` as shipped,
 * against the sandbox's API server: its roles, CNPG Database and connection Secrets are real objects.
 *
 * `pgfsm run` builds its privileges port itself (src/operator/cli/run.ts), with no way to pass another one
 * in, so this replaces the grant of the class it builds it from, before the command line has loaded it. A
 * sandbox on the real node runs pgfsm in its Pod, where the grants are real: this module is never loaded there.
 */
import { createLogger } from '../../operator/driver/logger.ts';
import { KubernetesPrivilegesPort } from '../../operator/kubernetes/privileges.ts';
import { RecordingPrivileges } from '../memory/database-ports.ts';

export const RECORDED_GRANTS_MESSAGE = 'grants recorded, not run: PostgreSQL is simulated in this sandbox';

const recording = new RecordingPrivileges();
// The operator's own log (stdout, its log file): one line per grant it would have made.
const log = createLogger({ level: process.env.PGFSM_LOG_LEVEL ?? 'info' }).child({ component: 'sandbox-grants' });

KubernetesPrivilegesPort.prototype.grant = async (cluster, plan) => {
  await recording.grant(cluster, plan);
  log.info(
    {
      namespace: cluster.namespace,
      cluster: cluster.name,
      database: plan.database,
      owner: plan.owner,
      schemas: plan.schemas,
      users: plan.users.map((u) => `${u.name} (${u.access})`),
      recorded: recording.grants.length,
    },
    RECORDED_GRANTS_MESSAGE,
  );
};

// A deletion under Delete asks which roles PostgreSQL still has: none here, once CNPG (simulated) has dropped them,
// which the deletion also waits for in CNPG's report.
KubernetesPrivilegesPort.prototype.existingRoles = async () => [];

// Nor can it look at what PostgreSQL holds: the pass then judges the database by CNPG's (simulated) report.
KubernetesPrivilegesPort.prototype.inspect = async () => {
  throw new Error('PostgreSQL is simulated in this sandbox: nothing to inspect');
};
