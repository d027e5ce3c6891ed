/**
 * How a cluster's archive and backup objects are named. The archive's name (barman's server name) keeps teams and
 * generations apart: it carries the namespace in its folder and the cluster's uid in its name, so a cluster
 * recreated under the same name, a restored cluster and a namesake in another namespace each write into an archive
 * of their own, and none finds another's WAL there ("Expected empty archive", plugin issue #683).
 */
import { createHash } from 'node:crypto';

/** The first characters of the uid that go into the server name: 32 bits, against namesakes of one namespace. */
const UID_CHARACTERS = 8;

/** The server name a cluster archives under: `<name>-<first 8 characters of its uid>`. */
export const serverNameOf = (cluster: { metadata: { name: string; uid: string } }): string =>
  `${cluster.metadata.name}-${cluster.metadata.uid.slice(0, UID_CHARACTERS).toLowerCase()}`;

/** The folder of a namespace in the class's store: `<destinationPath>/<namespace>/`. */
export const archivePathOf = (destinationPath: string, namespace: string): string =>
  `${destinationPath.replace(/\/+$/, '')}/${namespace}/`;

/** The ObjectStore a cluster archives to. */
export const objectStoreName = (cluster: string) => `${cluster}-backups`;

/**
 * The ObjectStore a restored cluster reads its source's archive through: an object of its own, so that its own
 * store (retention, compression) and the source's archive are never one object.
 */
export const sourceStoreName = (cluster: string) => `${cluster}-restore-source`;

/** The name of the restore source among the CNPG Cluster's externalClusters. */
export const RESTORE_SOURCE = 'restore-source';

export const scheduledBackupName = (cluster: string) => `${cluster}-scheduled`;

/** Hexadecimal characters of a token's hash in its Backup's name: 48 bits, so two tokens never meet in practice. */
const TOKEN_HASH_CHARACTERS = 12;

/**
 * The on-demand Backup a token asks for: the same token always names the same Backup, so a pass that created it and
 * died before recording the token creates nothing more the next time.
 */
export const onDemandBackupName = (cluster: string, token: string): string =>
  `${cluster}-backup-${createHash('sha256').update(token).digest('hex').slice(0, TOKEN_HASH_CHARACTERS)}`;
