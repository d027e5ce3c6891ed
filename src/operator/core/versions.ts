/**
 * The resourceVersion a PostgresCluster write must be conditional on. A pass decides on the cluster it
 * read, and writes its finalizers and then its status conditional on that version, so that a pass
 * decided on an old view — a stale cache, a leader that was paused — fails with a conflict instead of
 * overwriting newer state. The pass's own finalizer write moves the version on before its status
 * write; this remembers, per cluster, which version that write led to from which one it was read at.
 */
import type { PostgresCluster } from '../api/schema.ts';

export class OwnWrites {
  private readonly moved = new Map<string, { from: string; to: string }>();

  /** The version to write against: the one read, or where this process's own write since moved it. */
  versionOf(cluster: PostgresCluster): string | undefined {
    const read = cluster.metadata.resourceVersion;
    const moved = cluster.metadata.uid === undefined ? undefined : this.moved.get(cluster.metadata.uid);
    return moved && moved.from === read ? moved.to : read;
  }

  /** A write against `cluster` (as read) succeeded and left the object at version `to`. */
  wrote(cluster: PostgresCluster, to: string | undefined): void {
    const { uid, resourceVersion: from } = cluster.metadata;
    if (uid === undefined || from === undefined || to === undefined) return;
    this.moved.set(uid, { from, to });
  }

  /** The pass is over (its status is written, or the object is gone): the next one reads afresh. */
  forget(cluster: PostgresCluster): void {
    if (cluster.metadata.uid !== undefined) this.moved.delete(cluster.metadata.uid);
  }
}
