/**
 * Where a process's main-thread CPU went, from a V8 CPU profile (`node --cpu-prof`): the samples inside a
 * window, each charged to the frame it was taken in (self time), grouped by what that code is. It answers
 * the question behind "operator CPU per cluster": how much of it is Node's HTTP client, TLS and sockets,
 * which every request pays whoever makes it, and how much is pgfsm's own JavaScript.
 *
 * Read it with its limits: V8 charges its builtins (JSON.parse, JSON.stringify, Map and Array methods) to
 * the JavaScript function that called them, so parsing a watch event counts as the informer's and building
 * a request body as rest.ts's; the kernel's time inside a system call counts as the native frame that made
 * it (`writev`); threads other than the main one (V8's GC helpers, libuv's pool) are not in the profile.
 */
import { readFileSync } from 'node:fs';

/** The parts of a `.cpuprofile` this reads (Chrome DevTools' Profile; times in µs of the monotonic clock). */
export interface CpuProfile {
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string }; children?: number[] }>;
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

export type Share = 'transport' | 'v8' | 'pgfsm' | 'library' | 'start-up';

export interface ProfileGroup {
  /** What the code is, e.g. "node: HTTP, TLS and sockets" or "pgfsm: driver". */
  name: string;
  share: Share;
  ms: number;
}

export interface ProfileSplit {
  /** Main-thread CPU in the window, ms (idle left out). */
  busyMs: number;
  groups: ProfileGroup[];
}

/** Node's own modules that carry a request: its HTTP client, TLS, sockets, streams and their events. */
const TRANSPORT =
  /^node:(_http_|https|http$|net|tls|_tls_|internal\/(streams|stream_base|net|tls|url|http|dns)|stream|events|buffer|url)/;
/** Native frames of the socket path (the system calls and their TLS encryption). */
const NATIVE_TRANSPORT = new Set(['writev', 'writeUtf8String', 'writeBuffer', 'writeLatin1String', 'onStreamRead']);

function groupOf(functionName: string, url: string, inModuleLoading: boolean): { name: string; share: Share } {
  if (inModuleLoading) return { name: 'start-up: loading modules', share: 'start-up' };
  if (functionName === '(garbage collector)') return { name: 'V8: garbage collection', share: 'v8' };
  if (functionName === '(program)') return { name: 'V8: native code outside JavaScript', share: 'v8' };
  if (functionName === 'runMicrotasks') return { name: 'V8: promise jobs', share: 'v8' };
  if (!url) {
    return NATIVE_TRANSPORT.has(functionName)
      ? { name: 'node: HTTP, TLS and sockets', share: 'transport' }
      : { name: 'V8 and Node: other native calls', share: 'v8' };
  }
  if (url.startsWith('node:')) {
    return TRANSPORT.test(url)
      ? { name: 'node: HTTP, TLS and sockets', share: 'transport' }
      : { name: 'node: timers, queues and the rest', share: 'v8' };
  }
  const ours = /\/src\/operator\/([^/]+)\//.exec(url);
  if (ours) return { name: `pgfsm: ${ours[1]}`, share: 'pgfsm' };
  if (/\/machines\/[^/]+$/.test(url)) return { name: 'pgfsm: machines (the statechart and its tick)', share: 'pgfsm' };
  const library = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  // The bench's compiled operator lives under node_modules/.cache (api-server.bench.ts): ours all the same.
  if (library && library[1] !== '.cache') return { name: `library: ${library[1]}`, share: 'library' };
  return { name: 'pgfsm: other', share: 'pgfsm' };
}

/** The split of the samples taken between `fromUs` and `toUs` (the profile's clock: `process.hrtime` in µs). */
export function splitProfile(profile: CpuProfile, fromUs = -Infinity, toUs = Infinity): ProfileSplit {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const loading = new Map<number, boolean>();
  const inModuleLoading = (id: number): boolean => {
    const known = loading.get(id);
    if (known !== undefined) return known;
    const url = byId.get(id)?.callFrame.url ?? '';
    const up = parent.get(id);
    const answer = url.startsWith('node:internal/modules/') || (up !== undefined && inModuleLoading(up));
    loading.set(id, answer);
    return answer;
  };
  const groups = new Map<string, ProfileGroup>();
  let at = profile.startTime;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    at += delta;
    if (at < fromUs || at > toUs) return;
    const frame = byId.get(id)?.callFrame;
    if (!frame || frame.functionName === '(idle)' || frame.functionName === '(root)') return;
    const { name, share } = groupOf(frame.functionName, frame.url, inModuleLoading(id));
    const group = groups.get(name) ?? { name, share, ms: 0 };
    group.ms += delta / 1000;
    groups.set(name, group);
  });
  const sorted = [...groups.values()].sort((a, b) => b.ms - a.ms);
  return { busyMs: sorted.reduce((sum, g) => sum + g.ms, 0), groups: sorted };
}

/** Main-thread CPU of one share, as a fraction of the busy time. */
export const fractionOf = (split: ProfileSplit, share: Share): number =>
  split.busyMs > 0 ? split.groups.filter((g) => g.share === share).reduce((a, g) => a + g.ms, 0) / split.busyMs : 0;

export const readProfile = (file: string): CpuProfile => JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
