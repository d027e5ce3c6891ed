/**
 * The node's S3 object store for backups (issue 36): versitygw serving a directory of the node's run directory
 * (its posix backend: top-level directories are buckets, metadata in extended attributes), started like the
 * node's other daemons, as a process of the node's network namespace that listens on the node's address only.
 * Pods reach it at `http://10.77.0.1:7070`; nothing outside the namespace can, and it reaches nothing.
 *
 * Its root credentials are made per node start and kept in a file readable by root only; they are never printed
 * or put on a command line (versitygw reads them from its environment, curl from its standard input).
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Log } from '../control-plane/log.ts';
import { get } from '../control-plane/probe.ts';
import { startProcess, waitUntil } from '../control-plane/processes.ts';
import type { Gateway } from './gateway.ts';
import { NETNS_PATH, NODE_IP, type NodeDirs } from './layout.ts';
import { runInNamespace } from './netns.ts';

export const S3_PORT = 7070;
export const S3_ENDPOINT = `http://${NODE_IP}:${S3_PORT}`;
/** versitygw's default region, which boto3 signs for when a store names none. */
export const S3_REGION = 'us-east-1';
const HEALTH_PATH = '/health';
const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

export interface S3Credentials {
  accessKeyId: string;
  secretAccessKey: string;
}

export interface S3Store {
  endpoint: string;
  /** The directory whose subdirectories are the buckets. */
  root: string;
  credentialsFile: string;
  credentials: S3Credentials;
}

export const s3Paths = (dirs: NodeDirs) => ({
  root: join(dirs.run, 's3', 'data'),
  credentialsFile: join(dirs.run, 's3', 'credentials.json'),
  logFile: join(dirs.logs, 'versitygw.log'),
});

/** The credentials of this node start, made the first time they are asked for. */
export function storeCredentials(dirs: NodeDirs): S3Credentials {
  const { credentialsFile } = s3Paths(dirs);
  if (existsSync(credentialsFile)) return JSON.parse(readFileSync(credentialsFile, 'utf8')) as S3Credentials;
  const credentials = {
    accessKeyId: `pgfsm${randomBytes(6).toString('hex')}`,
    secretAccessKey: randomBytes(24).toString('base64url'),
  };
  mkdirSync(join(dirs.run, 's3'), { recursive: true, mode: 0o700 });
  writeFileSync(credentialsFile, `${JSON.stringify(credentials)}\n`, { mode: 0o600 });
  return credentials;
}

/**
 * Starts versitygw inside the namespace (unless it answers already) and waits for its health path, asked through the
 * gateway from inside the namespace. The process outlives us like every daemon of the node; the node's teardown ends
 * it with everything else of the namespace.
 */
export async function startS3Store(options: {
  dirs: NodeDirs;
  gateway: Gateway;
  versitygw: string;
  log: Log;
  timeoutMs?: number;
}): Promise<S3Store> {
  const { dirs, gateway, log } = options;
  const paths = s3Paths(dirs);
  const credentials = storeCredentials(dirs);
  const store = { endpoint: S3_ENDPOINT, root: paths.root, credentialsFile: paths.credentialsFile, credentials };
  const healthPort = await gateway.open(NODE_IP, S3_PORT);
  const healthy = async () => (await get(`http://127.0.0.1:${healthPort}${HEALTH_PATH}`)).status === 200;
  if (await healthy().catch(() => false)) return store;

  const started = Date.now();
  mkdirSync(paths.root, { recursive: true, mode: 0o700 });
  const daemon = startProcess({
    name: 'versitygw',
    command: 'nsenter',
    args: [
      `--net=${NETNS_PATH}`,
      '--',
      options.versitygw,
      '--port',
      `${NODE_IP}:${S3_PORT}`,
      '--health',
      HEALTH_PATH,
      '--quiet',
      'posix',
      paths.root,
    ],
    env: {
      ...process.env,
      ROOT_ACCESS_KEY: credentials.accessKeyId,
      ROOT_SECRET_KEY: credentials.secretAccessKey,
    },
    logFile: paths.logFile,
    outlivesUs: true,
  });
  await waitUntil('versitygw answering its health path', healthy, {
    timeoutMs: options.timeoutMs ?? 60_000,
    watch: [daemon],
  });
  log(`S3 store: versitygw at ${S3_ENDPOINT}, posix backend ${paths.root} (${seconds(started)})`);
  return store;
}

/**
 * Makes `bucket` with a signed S3 `CreateBucket` (curl's SigV4, run inside the namespace), then checks with a signed
 * `HeadBucket` that the store lists it. An existing bucket of ours is accepted.
 */
export async function createBucket(store: S3Store, bucket: string): Promise<void> {
  const created = await s3Request(store, 'PUT', `/${bucket}`);
  // 409 BucketAlreadyOwnedByYou: a second call for the same node.
  if (created.status !== 200 && !(created.status === 409 && created.body.includes('BucketAlreadyOwnedByYou'))) {
    throw new Error(`CreateBucket ${bucket} answered ${created.status}: ${created.body.slice(0, 500)}`);
  }
  const head = await s3Request(store, 'HEAD', `/${bucket}`);
  if (head.status !== 200) throw new Error(`HeadBucket ${bucket} answered ${head.status} after its creation`);
}

/** Keys under `prefix` in `bucket` (ListObjectsV2, first page), for a test that looks at what was stored. */
export async function listKeys(store: S3Store, bucket: string, prefix = ''): Promise<string[]> {
  const answer = await s3Request(store, 'GET', `/${bucket}?list-type=2&prefix=${encodeURIComponent(prefix)}`);
  if (answer.status !== 200) throw new Error(`ListObjectsV2 ${bucket} answered ${answer.status}: ${answer.body}`);
  return [...answer.body.matchAll(/<Key>([^<]*)<\/Key>/g)].map((m) => m[1] ?? '');
}

/**
 * One signed request to the store from inside the namespace. The credentials reach curl as a config file on its
 * standard input (`-K -`), so no command line shows them.
 */
export async function s3Request(
  store: S3Store,
  method: 'GET' | 'PUT' | 'HEAD',
  path: string,
): Promise<{ status: number; body: string }> {
  const marker = '\n--pgfsm-status--';
  const args = [
    '--silent',
    '--show-error',
    '--max-time',
    '20',
    '--aws-sigv4',
    `aws:amz:${S3_REGION}:s3`,
    '--config',
    '-',
    // curl 7.88 signs but does not send the payload hash, which S3 (and versitygw) require: that of an empty body.
    '--header',
    `x-amz-content-sha256: ${EMPTY_SHA256}`,
    ...(method === 'HEAD' ? ['--head'] : ['--request', method]),
    '--write-out',
    `${marker}%{http_code}`,
    `${store.endpoint}${path}`,
  ];
  const config = `user = "${store.credentials.accessKeyId}:${store.credentials.secretAccessKey}"\n`;
  const { code, stdout, stderr } = await runInNamespace('curl', args, { input: config, timeoutMs: 30_000 });
  const at = stdout.lastIndexOf(marker);
  if (code !== 0 || at < 0) throw new Error(`S3 ${method} ${path} failed (curl exit ${code}): ${stderr.trim()}`);
  return { status: Number(stdout.slice(at + marker.length)), body: stdout.slice(0, at) };
}

const seconds = (since: number) => `${((Date.now() - since) / 1000).toFixed(1)}s`;
