/**
 * Where a heap snapshot's memory goes, by owner: the retained size (dominator tree over the snapshot's strong
 * edges) of each object whose constructor is named on the command line — the in-memory API, the CNPG simulator,
 * the driver's queue, caches and memos — and, inside each owner, the self size by constructor of what it alone
 * keeps alive. A tool for finding where a fleet's memory goes (issue 10), not part of `npm run bench`.
 *
 *   node --max-old-space-size=4096 --import tsx bench/heap-owners.ts <file.heapsnapshot> [Constructor ...]
 *
 * Without constructors it reports the usual suspects of the fleet (see OWNERS).
 */
import { readFileSync } from 'node:fs';

const OWNERS = [
  'Simulation',
  'MemoryApiServer',
  'CnpgSimulator',
  'MemoryEventSink',
  'VirtualTimers',
  'Controller',
  'WorkQueue',
  'WorkerPool',
  'MemoryObjectSource',
  'Announcements',
  'ContentByVersion',
  'Sightings',
];

interface Snapshot {
  snapshot: {
    meta: {
      node_fields: string[];
      node_types: [string[], ...unknown[]];
      edge_fields: string[];
      edge_types: [string[], ...unknown[]];
    };
  };
  nodes: number[];
  edges: number[];
  strings: string[];
}

export function analyse(path: string, owners: string[]) {
  const raw = JSON.parse(readFileSync(path, 'utf8')) as Snapshot;
  const { meta } = raw.snapshot;
  const nf = meta.node_fields.length;
  const ef = meta.edge_fields.length;
  const typeAt = meta.node_fields.indexOf('type');
  const nameAt = meta.node_fields.indexOf('name');
  const sizeAt = meta.node_fields.indexOf('self_size');
  const edgeCountAt = meta.node_fields.indexOf('edge_count');
  const edgeTypeAt = meta.edge_fields.indexOf('type');
  const edgeNameAt = meta.edge_fields.indexOf('name_or_index');
  const toAt = meta.edge_fields.indexOf('to_node');
  const nodeTypes = meta.node_types[0];
  const edgeTypes = meta.edge_types[0];
  const weak = edgeTypes.indexOf('weak');
  const shortcut = edgeTypes.indexOf('shortcut');
  const count = raw.nodes.length / nf;
  const selfSize = new Float64Array(count);
  const firstEdge = new Uint32Array(count + 1);
  for (let i = 0, e = 0; i < count; i++) {
    firstEdge[i] = e;
    e += raw.nodes[i * nf + edgeCountAt] as number;
    selfSize[i] = raw.nodes[i * nf + sizeAt] as number;
    firstEdge[i + 1] = e;
  }
  const strong = (e: number) => {
    const t = raw.edges[e * ef + edgeTypeAt];
    return t !== weak && t !== shortcut;
  };
  const target = (e: number) => (raw.edges[e * ef + toAt] as number) / nf;
  const label = (i: number) => {
    const type = nodeTypes[raw.nodes[i * nf + typeAt] as number] ?? '?';
    const name = raw.strings[raw.nodes[i * nf + nameAt] as number] ?? '';
    if (type === 'object' || type === 'native') return name;
    if (type === 'closure') return `(closure)`;
    if (type === 'array') return `(array ${name})`;
    if (type.includes('string')) return '(string)';
    return `(${type})`;
  };

  // Reverse post-order from the root (node 0) over strong edges, iteratively.
  const order = new Int32Array(count).fill(-1);
  const post: number[] = [];
  const stack: number[] = [0];
  const cursor = new Uint32Array(count);
  const visited = new Uint8Array(count);
  visited[0] = 1;
  for (let i = 0; i < count; i++) cursor[i] = firstEdge[i] as number;
  while (stack.length > 0) {
    const n = stack[stack.length - 1] as number;
    let pushed = false;
    while ((cursor[n] as number) < (firstEdge[n + 1] as number)) {
      const e = cursor[n] as number;
      cursor[n] = e + 1;
      if (!strong(e)) continue;
      const t = target(e);
      if (visited[t]) continue;
      visited[t] = 1;
      stack.push(t);
      pushed = true;
      break;
    }
    if (!pushed) {
      stack.pop();
      order[n] = post.length;
      post.push(n);
    }
  }
  // Predecessors over strong edges among reachable nodes.
  const predCount = new Uint32Array(count + 1);
  for (let n = 0; n < count; n++) {
    if (!visited[n]) continue;
    for (let e = firstEdge[n] as number; e < (firstEdge[n + 1] as number); e++) {
      if (strong(e)) predCount[target(e) + 1] = (predCount[target(e) + 1] as number) + 1;
    }
  }
  for (let i = 0; i < count; i++) predCount[i + 1] = (predCount[i + 1] as number) + (predCount[i] as number);
  const preds = new Uint32Array(predCount[count] as number);
  const fill = predCount.slice(0, count);
  for (let n = 0; n < count; n++) {
    if (!visited[n]) continue;
    for (let e = firstEdge[n] as number; e < (firstEdge[n + 1] as number); e++) {
      if (!strong(e)) continue;
      const t = target(e);
      preds[fill[t] as number] = n;
      fill[t] = (fill[t] as number) + 1;
    }
  }
  // Cooper, Harvey, Kennedy: iterate immediate dominators in reverse post-order until stable.
  const idom = new Int32Array(count).fill(-1);
  idom[0] = 0;
  const intersect = (a: number, b: number) => {
    while (a !== b) {
      while ((order[a] as number) < (order[b] as number)) a = idom[a] as number;
      while ((order[b] as number) < (order[a] as number)) b = idom[b] as number;
    }
    return a;
  };
  for (let changed = true; changed; ) {
    changed = false;
    for (let k = post.length - 2; k >= 0; k--) {
      const n = post[k] as number;
      let dom = -1;
      for (let p = predCount[n] as number; p < (predCount[n + 1] as number); p++) {
        const pred = preds[p] as number;
        if (idom[pred] === -1) continue;
        dom = dom === -1 ? pred : intersect(pred, dom);
      }
      if (dom !== -1 && idom[n] !== dom) {
        idom[n] = dom;
        changed = true;
      }
    }
  }
  // Retained sizes: children before parents (post-order).
  const retained = Float64Array.from(selfSize);
  for (const n of post) {
    const dom = idom[n] as number;
    if (n !== 0 && dom !== -1) retained[dom] = (retained[dom] as number) + (retained[n] as number);
  }
  // The owner of each node: the nearest dominator named in `owners` (outermost wins for nesting: Simulation last).
  const wanted = new Set(owners);
  const ownerOf = new Int32Array(count).fill(-1);
  for (let k = post.length - 1; k >= 0; k--) {
    const n = post[k] as number;
    if (wanted.has(label(n))) ownerOf[n] = n;
    else if (n !== 0 && idom[n] !== -1) ownerOf[n] = ownerOf[idom[n] as number] as number;
  }
  const byOwner = new Map<string, { retained: number; objects: number; parts: Map<string, number> }>();
  for (const n of post) {
    const o = ownerOf[n] as number;
    const key = o === -1 ? '(no owner listed)' : o === n ? label(n) : label(o);
    const entry = byOwner.get(key) ?? { retained: 0, objects: 0, parts: new Map() };
    byOwner.set(key, entry);
    entry.retained += selfSize[n] as number;
    entry.objects++;
    const part = label(n);
    entry.parts.set(part, (entry.parts.get(part) ?? 0) + (selfSize[n] as number));
  }
  const edgeName = (e: number) => {
    const t = raw.edges[e * ef + edgeTypeAt] as number;
    const v = raw.edges[e * ef + edgeNameAt] as number;
    return edgeTypes[t] === 'element' || edgeTypes[t] === 'hidden' ? `[${v}]` : (raw.strings[v] ?? '?');
  };
  // The fields of each owner instance that retain the most.
  const fields: Array<{ owner: string; field: string; retained: number }> = [];
  for (const n of post) {
    if (ownerOf[n] !== n) continue;
    for (let e = firstEdge[n] as number; e < (firstEdge[n + 1] as number); e++) {
      if (!strong(e)) continue;
      const t = target(e);
      if (idom[t] === n) fields.push({ owner: label(n), field: edgeName(e), retained: retained[t] as number });
    }
  }
  let total = 0;
  for (const n of post) total += selfSize[n] as number;
  return { total, byOwner, fields };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [path, ...named] = process.argv.slice(2);
  if (!path) throw new Error('usage: heap-owners.ts <file.heapsnapshot> [Constructor ...]');
  const { total, byOwner, fields } = analyse(path, named.length > 0 ? named : OWNERS);
  const mb = (b: number) => (b / 2 ** 20).toFixed(2);
  console.log(`reachable: ${mb(total)} MB`);
  for (const [owner, entry] of [...byOwner].sort((a, b) => b[1].retained - a[1].retained)) {
    const parts = [...entry.parts]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 8)
      .map(([p, s]) => `${p} ${mb(s)}`)
      .join(', ');
    console.log(`${owner}: ${mb(entry.retained)} MB in ${entry.objects} objects — ${parts}`);
  }
  const merged = new Map<string, number>();
  for (const f of fields) merged.set(`${f.owner}.${f.field}`, (merged.get(`${f.owner}.${f.field}`) ?? 0) + f.retained);
  console.log('\nlargest fields of the owners (retained):');
  for (const [field, size] of [...merged].sort((a, b) => b[1] - a[1]).slice(0, 30))
    console.log(`  ${field}: ${mb(size)} MB`);
}
