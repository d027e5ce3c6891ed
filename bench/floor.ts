/**
 * The bench's side of the floor measurement (floor-client.ts says what the floor is): the audit policy that
 * keeps the operator's request bodies, the watches and the writes the two client processes make, and running
 * them.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { KubeConfig } from '@kubernetes/client-node';
import { resourcePath } from '../src/operator/kubernetes/resources.ts';
import { CONTENT } from '../src/operator/kubernetes/rest.ts';
import { WATCH_SHAPES } from '../src/operator/kubernetes/watch-sources.ts';
import { compileScript } from './fleet.ts';
import type { FloorAuth, FloorConfig, FloorRequest, FloorWatch, ReplayReport, WatchReport } from './floor-client.ts';
import { until } from './poll.ts';

const HERE = dirname(fileURLToPath(import.meta.url));
const CLIENT = join(HERE, '..', 'node_modules', '.cache', 'pgfsm', 'floor-client.mjs');

/** What one floor repetition measured, beside the operator's CPU of the same repetition. */
export interface FloorFigures {
  /** The `watch` client's CPU over the window to Ready (the operator's window), and what it parsed. */
  watchCpuMs: number;
  watch: WatchReport;
  /** The `replay` client's report, and how many writes it replayed. */
  replay: ReplayReport;
  requests: number;
  /** Writes the audit log recorded without a body (Secrets): replayed with a body of the same shape. */
  synthesized: number;
}

/**
 * An audit policy for the floor repetition: the operator's writes at level Request (their bodies, for the
 * replay), except Secrets, which stay at Metadata so that no Secret's value is written anywhere; the rest of
 * the operator's requests at Metadata, as `auditPolicyFor` keeps them; then `moreRules`; nothing else.
 */
export function floorAuditPolicy(user: string, moreRules: readonly object[]): object {
  return {
    apiVersion: 'audit.k8s.io/v1',
    kind: 'Policy',
    omitStages: ['RequestReceived'],
    rules: [
      { level: 'Metadata', users: [user], resources: [{ group: '', resources: ['secrets'] }] },
      { level: 'Request', users: [user], verbs: ['create', 'patch', 'update'] },
      { level: 'Metadata', users: [user] },
      ...moreRules,
      { level: 'None' },
    ],
  };
}

/** The operator's watches: every watched kind across all namespaces, as `pgfsm run` opens them by default. */
export function floorWatches(): FloorWatch[] {
  return Object.values(WATCH_SHAPES).map((shape) => ({
    path: resourcePath(shape.resource),
    metadataOnly: shape.metadataOnly === true,
    ...(shape.requiredLabel ? { labelSelector: shape.requiredLabel } : {}),
  }));
}

interface RawAuditLine {
  stage?: string;
  verb?: string;
  user?: { username?: string };
  requestURI?: string;
  objectRef?: { resource?: string; namespace?: string; name?: string };
  requestReceivedTimestamp?: string;
  requestObject?: unknown;
}

const METHODS = { create: 'POST', patch: 'PATCH', update: 'PUT' } as const;

/**
 * The writes `user` made from `fromMs` to `toMs` (when the API server received them), as floor-client.ts
 * replays them, from an audit log written under {@link floorAuditPolicy}; the Lease's renewals left out (the
 * table counts them apart). A create keeps its body under a new name, so that it creates rather than meets
 * "already exists"; a patch loses the resourceVersion the operator made it conditional on, so that it lands
 * (changing nothing: the same content again) and answers with the object, as the operator's did, rather than
 * with a short conflict. A Secret's body was never logged: it is replayed as a Secret of the same shape (a
 * username and a random 32-character password). A patch that names a field manager is a server-side apply;
 * the others are merge patches, the only two kinds the operator sends.
 */
export function replayRequests(lines: Iterable<string>, user: string, fromMs: number, toMs: number) {
  const requests: FloorRequest[] = [];
  let synthesized = 0;
  for (const line of lines) {
    if (!line.trim()) continue;
    const raw = JSON.parse(line) as RawAuditLine;
    const method = METHODS[raw.verb as keyof typeof METHODS];
    const receivedAt = Date.parse(raw.requestReceivedTimestamp ?? '');
    if (raw.stage !== 'ResponseComplete' || raw.user?.username !== user || !method || !raw.requestURI) continue;
    if (raw.objectRef?.resource === 'leases' || !(receivedAt >= fromMs && receivedAt <= toMs)) continue;
    let body = raw.requestObject;
    if (body === undefined) {
      if (raw.objectRef?.resource !== 'secrets') continue;
      body = secretLike(raw.objectRef.namespace ?? '', requests.length);
      synthesized++;
    } else if (method === 'POST') {
      body = renamed(body);
    } else {
      body = unconditional(body);
    }
    requests.push({
      at: receivedAt,
      method,
      uri: raw.requestURI,
      contentType: contentTypeOf(method, raw.requestURI),
      body,
    });
  }
  // The log is in the order answers went out; the replay goes in the order requests came, from the first.
  requests.sort((a, b) => a.at - b.at);
  const first = requests[0]?.at ?? 0;
  for (const r of requests) r.at -= first;
  return { requests, synthesized };
}

function contentTypeOf(method: string, uri: string): string {
  if (method !== 'PATCH') return CONTENT.json;
  return uri.includes('fieldManager=') ? CONTENT.apply : CONTENT.mergePatch;
}

function unconditional(body: unknown): unknown {
  const object = body as { metadata?: { resourceVersion?: string } };
  if (object.metadata?.resourceVersion === undefined) return body;
  const { resourceVersion: _, ...metadata } = object.metadata;
  return { ...object, metadata };
}

function renamed(body: unknown): unknown {
  const object = body as { metadata?: { name?: string } };
  if (!object.metadata?.name) return body;
  return { ...object, metadata: { ...object.metadata, name: `${object.metadata.name}-floor` } };
}

function secretLike(namespace: string, i: number) {
  const b64 = (text: string) => Buffer.from(text).toString('base64');
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: `floor-${i}`, namespace },
    type: 'kubernetes.io/basic-auth',
    data: { username: b64('postgres'), password: b64(randomBytes(24).toString('base64')) },
  };
}

/** How `kc`'s user authenticates, as floor-client.ts takes it: its token, or its client certificate. */
export function floorAuthOf(kc: KubeConfig): FloorAuth {
  const cluster = kc.getCurrentCluster();
  const user = kc.getCurrentUser();
  const pem = (data: string | undefined) => Buffer.from(data ?? '', 'base64').toString('utf8');
  const ca = pem(cluster?.caData);
  if (user?.token) return { ca, token: user.token };
  if (user?.certData && user.keyData) return { ca, cert: pem(user.certData), key: pem(user.keyData) };
  throw new Error('the floor clients need a kubeconfig with a token or with inline client certificate data');
}

export const compileFloorClient = (): Promise<string> => compileScript(join(HERE, 'floor-client.ts'), CLIENT);

function startClient(config: FloorConfig, dir: string): { child: ChildProcess; lines: string[] } {
  const file = join(dir, `floor-${config.mode}.json`);
  // The config holds a credential: readable by this user only, in the run's own temporary directory.
  writeFileSync(file, JSON.stringify(config), { mode: 0o600 });
  const child = spawn(process.execPath, [CLIENT, file], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines: string[] = [];
  let pending = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    pending += chunk.toString();
    const parts = pending.split('\n');
    pending = parts.pop() ?? '';
    lines.push(...parts.filter(Boolean));
  });
  return { child, lines };
}

const exited = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null) resolve();
    else child.once('exit', () => resolve());
  });

/** Waits until `probe` holds; if the client exits first or takes too long, it is killed and this throws. */
async function waitFor(what: string, probe: () => boolean, child: ChildProcess, timeoutMs: number): Promise<void> {
  const ready = () => {
    if (probe()) return true;
    // Exited, and all it printed read: it will not say it any more. Its last line may still be on the way when
    // the exit is seen (a replay that printed its report and exited between two polls failed here).
    if (child.exitCode !== null && (child.stdout?.readableEnded ?? true))
      throw new Error(`the floor client exited ${child.exitCode} before ${what}`);
    return undefined;
  };
  try {
    await until(`the floor client: ${what}`, ready, timeoutMs);
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
}

/** Starts the `watch` client and waits until every watch is open; `stop()` ends it and answers its report. */
export async function startFloorWatch(server: string, auth: FloorAuth, dir: string) {
  const { child, lines } = startClient({ mode: 'watch', server, auth, watches: floorWatches() }, dir);
  await waitFor('its watches to open', () => lines.includes('watching'), child, 60_000);
  const pid = child.pid as number;
  return {
    pid,
    async stop(): Promise<WatchReport> {
      child.kill('SIGTERM');
      await exited(child);
      const report = lines.find((l) => l.startsWith('{'));
      if (!report) throw new Error('the floor watch client printed no report');
      return JSON.parse(report) as WatchReport;
    },
  };
}

/** Runs the `replay` client over `requests` to its end and answers its report. */
export async function runFloorReplay(
  server: string,
  auth: FloorAuth,
  requests: FloorRequest[],
  dir: string,
): Promise<ReplayReport> {
  const { child, lines } = startClient({ mode: 'replay', server, auth, requests }, dir);
  const lastAt = requests.at(-1)?.at ?? 0;
  await waitFor('the end of its replay', () => lines.some((l) => l.startsWith('{')), child, lastAt + 120_000);
  await exited(child);
  return JSON.parse(lines.find((l) => l.startsWith('{')) as string) as ReplayReport;
}

/** The lines of a file. */
export const linesOf = (path: string): string[] => readFileSync(path, 'utf8').split('\n');
