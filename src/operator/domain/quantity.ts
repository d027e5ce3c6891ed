/**
 * Kubernetes quantities, compared by value. Only what pgfsm needs (storage sizes never shrink), so a
 * few lines instead of a dependency: client-node ships no quantity parser.
 */
const SUFFIX: Record<string, number> = {
  '': 1,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

export function quantityValue(quantity: string): number | undefined {
  const match = /^([0-9]+(?:\.[0-9]+)?)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$/.exec(quantity.trim());
  if (!match) return undefined;
  return Number(match[1]) * (SUFFIX[match[2] ?? ''] ?? Number.NaN);
}

export function sameQuantity(a: string | undefined, b: string | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return quantityValue(a) === quantityValue(b);
}
