/**
 * What a PostgresDatabase's guards mean in words (the blocker's summary and facts), and what a person can do
 * about it: create the PostgresCluster it names, hand over a Secret with the command its condition gives,
 * free a role another database or the cluster's spec holds. A database that only needs time gets no hint.
 */
import type { Condition } from '../api/schema.ts';
import type { DatabaseAssessment } from '../domain/database/assessment.ts';
import type { DatabaseObservation } from '../domain/database/observation.ts';
import { type DatabaseComponent, DatabaseReason } from '../domain/database/vocabulary.ts';
import { childNames, FINALIZER } from '../domain/vocabulary.ts';
import type { BlockerWords } from './blocker.ts';
import { DATABASE_LEAD, DATABASE_STEP_OF, databaseComponentFacts } from './database-facts.ts';
import type { HintContext } from './explain.ts';
import { progressHints } from './hints.ts';
import type { ConnectionSecretFact, DatabaseObservedFacts } from './types.ts';

/** `spec.users[0].name` out of a spec problem (`spec.users[0].name must be …`). */
const fieldOf = (problem: string) => /^spec[\w.[\]]*/.exec(problem)?.[0] ?? 'spec';

const secretsOwned = (facts: DatabaseObservedFacts) => facts.stillOwned.filter((c) => c.startsWith('Secret '));
const databasesOwned = (facts: DatabaseObservedFacts) => facts.stillOwned.filter((c) => c.startsWith('Database '));
const deletes = (facts: DatabaseObservedFacts) => facts.deletionPolicy === 'Delete';

export function databaseWords(facts: DatabaseObservedFacts, a: DatabaseAssessment): BlockerWords<DatabaseComponent> {
  const list = (items: string[]) => items.join(', ');
  const cluster = `PostgresCluster ${facts.cluster.name ?? '(none)'}`;
  const pushedRoles = () => facts.roles.filter((r) => r.state !== 'notPushed' && r.state !== 'claimed');
  return {
    summary: (check, component) => {
      switch (check.name) {
        case 'componentReady':
          return component
            ? `waiting for ${DATABASE_LEAD[component]}: ${list(databaseComponentFacts(component, facts))}`
            : '';
        case 'componentFailed':
          return component ? `the ${DATABASE_STEP_OF[component]} step failed: ${a.health[component].message}` : '';
        case 'specInvalid':
          return `invalid spec: ${a.specProblem ?? ''}`;
        case 'finalizerMissing':
          return `finalizer ${FINALIZER} not on the object yet: the operator adds it on its next pass`;
        case 'cnpgDatabaseGone': {
          const what = deletes(facts) ? 'CNPG drops the database' : 'the database stays in PostgreSQL';
          return `waiting for CNPG Database ${facts.cnpgDatabase.name} to be deleted (${what})`;
        }
        case 'rolesLetGo': {
          const names = list(pushedRoles().map((r) => r.name));
          return deletes(facts)
            ? `waiting for ${cluster} to drop role(s) ${names} and for CNPG to report them dropped`
            : `waiting for ${cluster} to take role(s) ${names} out of its managed roles (they stay in PostgreSQL)`;
        }
        case 'secretsCleanedUp':
          return `waiting for the connection Secrets to be ${deletes(facts) ? 'deleted' : 'released'}: ${list(secretsOwned(facts))}`;
        default:
          return `${check.guard} ${check.holds ? 'holds' : 'is false'}`;
      }
    },
    facts: (check, component) => {
      switch (check.name) {
        case 'specInvalid':
          return a.specProblem ? [`field ${fieldOf(a.specProblem)}`] : [];
        case 'cnpgDatabaseGone':
          return databasesOwned(facts);
        case 'rolesLetGo':
          return databaseComponentFacts('roles', facts);
        case 'secretsCleanedUp':
          return secretsOwned(facts);
        default:
          return component ? databaseComponentFacts(component, facts) : [];
      }
    },
  };
}

export interface DatabaseHintInput extends HintContext<DatabaseComponent> {
  observation: DatabaseObservation;
  facts: DatabaseObservedFacts;
  assessment: DatabaseAssessment;
}

const explainCluster = (namespace: string, name: string) => `pgfsm explain ${namespace}/${name}`;

/** The handover command the Secrets' condition message carries, for an orphan not handed over. */
const HANDOVER = /To hand it over: (kubectl annotate .+)$/;

/** One line per failing component that a person can act on, from its verdict and the facts. */
function verdictHints(input: DatabaseHintInput): string[] {
  const { assessment: a, facts, namespace } = input;
  const cluster = facts.cluster.name ?? '<name>';
  const out: string[] = [];
  for (const verdict of Object.values(a.health)) {
    switch (verdict.reason) {
      case DatabaseReason.InvalidSpec:
        out.push(`fix ${fieldOf(verdict.message)}: ${verdict.message}`);
        break;
      case DatabaseReason.ClusterNotFound:
        out.push(
          `create PostgresCluster ${namespace}/${cluster}: this PostgresDatabase waits for it (spec.cluster cannot be changed)`,
        );
        break;
      case DatabaseReason.ClusterNotPublished:
        out.push(
          `PostgresCluster ${cluster} is not Ready yet (${facts.cluster.phase ?? 'no status'}): ${explainCluster(namespace, cluster)} says why`,
        );
        break;
      case DatabaseReason.ClusterDeleting:
        out.push(
          `PostgresCluster ${cluster} is being deleted: this PostgresDatabase waits until one of that name exists again`,
        );
        break;
      case DatabaseReason.SecretOwnedByOther: {
        const command = HANDOVER.exec(verdict.message)?.[1];
        const orphan = facts.secrets.find((s) => s.exists && s.ownership === 'orphan' && !s.handedOver);
        if (command && orphan) {
          out.push(
            `Secret ${orphan.name} exists without an owner: if it holds the password of role ${orphan.role} for this ` +
              `database (a Retain deletion left it, or you made it), hand it over: ${command}; otherwise delete it`,
          );
        }
        break;
      }
      case DatabaseReason.RoleClaimed:
      case DatabaseReason.DatabaseClaimed:
      case DatabaseReason.SecretClaimed:
        out.push(...claimHints(input));
        break;
      case DatabaseReason.RolesReconciliationFailed:
        out.push(
          `CNPG needs a human: kubectl -n ${namespace} describe clusters.postgresql.cnpg.io ${childNames(cluster).cnpgCluster}`,
        );
        break;
      case DatabaseReason.DatabaseNotApplied:
        out.push(
          `CNPG cannot apply it: kubectl -n ${namespace} describe databases.postgresql.cnpg.io ${facts.cnpgDatabase.name}`,
        );
        break;
      default:
        break;
    }
  }
  return out;
}

/** Who holds each name this database cannot have, and how to do without it or free it. */
function claimHints({ facts, observation: o }: DatabaseHintInput): string[] {
  const owner = typeof o.database.spec?.owner === 'string' ? o.database.spec.owner : undefined;
  const cluster = facts.cluster.name ?? '<name>';
  const again = (field: string) => `create this PostgresDatabase again with another ${field} (it cannot be changed)`;
  return facts.claims.refused.map((r) => {
    const here =
      r.kind === 'database'
        ? again('spec.name')
        : r.kind === 'secret'
          ? 'create this PostgresDatabase again under another name (its Secrets are named <name>-<role>)'
          : r.name === owner
            ? again('spec.owner')
            : `rename or remove user ${r.name} in spec.users`;
    const there = r.heldBy.startsWith('PostgresDatabase ')
      ? `delete ${r.heldBy} (it holds it until it is gone)`
      : r.kind === 'role'
        ? `remove ${r.name} from PostgresCluster ${cluster}'s spec.managedRoles`
        : `free it in PostgresCluster ${cluster}'s spec`;
    return `${r.kind} ${r.name} is held by ${r.heldBy}: ${here}, or ${there}`;
  });
}

/** A child someone else controls is never taken over: a person decides. */
function foreignHints({ facts }: DatabaseHintInput): string[] {
  const secrets = facts.secrets
    .filter((s: ConnectionSecretFact) => s.exists && s.ownership === 'foreign')
    .map((s) => `Secret ${s.name} is controlled by ${s.controller}: remove it or rename this PostgresDatabase`);
  const d = facts.cnpgDatabase;
  const database =
    d.exists && d.ownership !== 'ours'
      ? [
          `CNPG Database ${d.name} is controlled by ${d.controller ?? 'nobody'}: pgfsm does not take it over; ` +
            'remove it or rename this PostgresDatabase',
        ]
      : [];
  return [...secrets, ...database];
}

function roleFailureHints({ facts }: DatabaseHintInput): string[] {
  return facts.roles.filter((r) => r.state === 'failed').map((r) => `CNPG cannot reconcile role ${r.name}: ${r.error}`);
}

/** Deletion waiting on its own writes: the Secrets it deletes (Delete) or releases (Retain). */
function deletionHints({ facts, namespace, blocker }: DatabaseHintInput): string[] {
  if (blocker?.guard !== 'secretsCleanedUp') return [];
  const verb = deletes(facts) ? 'deletes it' : 'releases it';
  return secretsOwned(facts).map(
    (child) =>
      `${child} in ${namespace} still carries our owner reference; pgfsm ${verb} on its next pass — ` +
      'if it stays, check that pgfsm runs and may delete and patch it',
  );
}

/** A write the last pass could not make, as its condition recorded it (grants over SQL fail here). */
function writeHints({ observation: o, namespace, facts }: DatabaseHintInput): string[] {
  const failed = (o.database.status?.conditions ?? []).filter(
    (c: Condition) => c.status === 'False' && c.reason === DatabaseReason.PrivilegesFailed,
  );
  const cluster = facts.cluster.name ?? '<name>';
  return failed.map(
    (c) =>
      `the last grant over SQL failed: ${c.message} — pgfsm connects to ${childNames(cluster).cnpgCluster}-rw in ` +
      `${namespace} as the superuser: check that the operator can reach it`,
  );
}

export function databaseHints(input: DatabaseHintInput): string[] {
  // Being deleted, the pipeline's verdicts no longer matter: only what holds the deletion up does.
  const deleting = Boolean(input.observation.database.metadata.deletionTimestamp);
  const pipeline = deleting ? [] : [...verdictHints(input), ...foreignHints(input), ...writeHints(input)];
  return [...new Set([...pipeline, ...roleFailureHints(input), ...deletionHints(input), ...progressHints(input)])];
}
