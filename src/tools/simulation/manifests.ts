/** Loads Kubernetes manifests (multi-document YAML) into the in-memory API. */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { MemoryApiServer, StoredObject } from '../memory/api-server.ts';

export function readManifests(dir: string): StoredObject[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml') || f.endsWith('.yml'))
    .sort()
    .flatMap((file) =>
      parseAllDocuments(readFileSync(join(dir, file), 'utf8'))
        .map((doc) => doc.toJS() as StoredObject | null)
        .filter((o): o is StoredObject => o !== null && typeof o === 'object' && typeof o.kind === 'string'),
    );
}

/** Classes first, then Secrets, then clusters: the order a user would apply them in. */
const ORDER = ['PostgresClusterClass', 'Secret', 'PostgresCluster'];

export function loadManifests(api: MemoryApiServer, objects: StoredObject[]): void {
  const rank = (o: StoredObject) => (ORDER.indexOf(o.kind) + ORDER.length + 1) % (ORDER.length + 1);
  for (const object of [...objects].sort((a, b) => rank(a) - rank(b))) {
    api.create({ ...object, metadata: { ...object.metadata, namespace: object.metadata.namespace ?? '' } });
  }
}
