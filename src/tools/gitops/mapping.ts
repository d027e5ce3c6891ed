/** deploy/health/mapping.md: the whole state -> Argo CD / Flux / kstatus table, for readers. */
import { GENERATED_NOTICE, REGENERATE } from './notice.ts';
import type { ExpectedStatus } from './table.ts';

const code = (s: string) => `\`${s}\``;

export function renderMapping(table: ExpectedStatus[]): string {
  const header = ['State', 'Variant', 'Phase', 'Ready', 'Reconciling', 'Stalled', 'Argo CD', 'Flux', 'kstatus'];
  const rows = table.map((r) => [
    code(r.state),
    r.variant === 'deadlineExceeded' ? `past deadline (${code(r.stalledReason ?? '')})` : '',
    r.phase,
    r.ready,
    r.reconciling,
    r.stalled,
    r.argo,
    r.flux,
    r.kstatus,
  ]);
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  return `# PostgresCluster health as Argo CD, Flux and kstatus see it

${GENERATED_NOTICE}. Regenerate with \`${REGENERATE}\`.

One row per state of the machine (plus its progress-deadline variant where it has one), with the
summary conditions src/operator/core/status.ts publishes in it and the verdict of each consumer:
Argo CD through \`argocd/pgfsm.io/PostgresCluster/health.lua\`, Flux through
\`flux/kustomization-healthcheckexprs.yaml\`, and kstatus' generic rules (Flux without the expressions,
\`kubectl\`-style tooling). States in the Deleting phase always carry a \`deletionTimestamp\`.

${line(header)}
${line(header.map(() => '---'))}
${rows.map(line).join('\n')}

Whatever the state:

| Object | Argo CD | Flux | kstatus |
| --- | --- | --- | --- |
| \`metadata.deletionTimestamp\` set | Progressing (\`Deleting\`) | InProgress | Terminating |
| \`status.observedGeneration\` behind \`metadata.generation\` | Progressing | InProgress | InProgress |
| no \`status\` yet | Progressing | Unknown (the expressions cannot read a missing \`status\`; Flux keeps waiting) | Current (nothing to read) |

- **Suspended** is \`Suspended\` in Argo CD and InProgress for Flux and kstatus, which have no paused
  result: Current would let dependants start on a cluster nobody reconciles, Failed would report a
  deliberate, reversible choice as a failure.
- kstatus' generic rules call an object without conditions Current; the Flux expressions require
  \`Ready=True\` at the observed generation, so they do not.
`;
}
