/** DOT to SVG with the WASM build of Graphviz: offline, and byte-stable for a pinned @viz-js/viz. */
import { instance } from '@viz-js/viz';

export async function toSvg(dot: string): Promise<string> {
  const viz = await instance();
  const result = viz.render(dot, { format: 'svg' });
  // Graphviz reports layout problems (e.g. an lhead it had to ignore) as warnings; treat them as bugs.
  const problems = result.errors.map((e) => `${e.level ?? 'error'}: ${e.message.trim()}`);
  if (result.status !== 'success' || problems.length > 0) throw new Error(`graphviz: ${problems.join('; ')}`);
  return result.output;
}
