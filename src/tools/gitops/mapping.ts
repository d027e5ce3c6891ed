/** deploy/health/mapping.md: the whole state -> Argo CD / Flux / kstatus table of every kind, for readers. */
import { ARGO_LUA_DIR } from './argocd.ts';
import type { HealthKind } from './kinds.ts';
import { generatedNotice, listed, REGENERATE } from './notice.ts';

const code = (s: string) => `\`${s}\``;
const line = (cells: string[]) => `| ${cells.join(' | ')} |`;

function section({ kind, projection, table }: HealthKind): string {
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
  return `## ${kind}

Conditions as \`${projection}\` publishes them; Argo CD reads them through
\`${ARGO_LUA_DIR}/${kind}/health.lua\`.

${line(header)}
${line(header.map(() => '---'))}
${rows.map(line).join('\n')}
`;
}

export function renderMapping(kinds: HealthKind[]): string {
  const names = listed(kinds.map((k) => k.kind));
  const suspendable = kinds.filter((k) => k.table.some((r) => r.suspended)).map((k) => k.kind);
  const suspendedNote =
    suspendable.length === 0
      ? ''
      : `- **Suspended** (${listed(suspendable)}) is \`Suspended\` in Argo CD and InProgress for Flux and kstatus,
  which have no paused result: Current would let dependants start on a resource nobody reconciles, Failed
  would report a deliberate, reversible choice as a failure.
`;
  return `# ${names} health as Argo CD, Flux and kstatus see it

${generatedNotice(kinds.map((k) => k.source))}. Regenerate with \`${REGENERATE}\`.

One row per state of each kind's machine (plus its progress-deadline variant where it has one), with the
summary conditions its status projection publishes in it and the verdict of each consumer: Argo CD through
the kind's \`health.lua\` under \`${ARGO_LUA_DIR}/\`, Flux through \`flux/kustomization-healthcheckexprs.yaml\`,
and kstatus' generic rules (Flux without the expressions, \`kubectl\`-style tooling). States in the Deleting
phase always carry a \`deletionTimestamp\`.

${kinds.map(section).join('\n')}
## Whatever the state

The same for every kind:

| Object | Argo CD | Flux | kstatus |
| --- | --- | --- | --- |
| \`metadata.deletionTimestamp\` set | Progressing (\`Deleting\`) | InProgress | Terminating |
| \`status.observedGeneration\` behind \`metadata.generation\` | Progressing | InProgress | InProgress |
| no \`status\` yet | Progressing | Unknown (the expressions cannot read a missing \`status\`; Flux keeps waiting) | Current (nothing to read) |

${suspendedNote}- kstatus' generic rules call an object without conditions Current; the Flux expressions require
  \`Ready=True\` at the observed generation, so they do not.
`;
}
