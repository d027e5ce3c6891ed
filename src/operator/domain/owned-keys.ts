/**
 * Maps that pgfsm shares with other writers (PostgreSQL parameters that CNPG defaults, PgBouncer
 * parameters someone tuned by hand). Server-side apply only ever removes keys the applier owned, so
 * pgfsm remembers its keys in an annotation: a key it no longer wants is drift only if it was its own,
 * and keys other writers added never count (no repair could remove them: it would loop forever).
 */
export const OWNED_PARAMETERS_ANNOTATION = 'pgfsm.io/owned-parameters';

export const ownedKeysAnnotation = (map: Record<string, string>) => ({
  [OWNED_PARAMETERS_ANNOTATION]: Object.keys(map).sort().join(','),
});

export function ownedMapDrifted(
  observed: Record<string, string> | undefined,
  observedAnnotations: Record<string, string> | undefined,
  desired: Record<string, string>,
): boolean {
  const ownedBefore = observedAnnotations?.[OWNED_PARAMETERS_ANNOTATION];
  const ownedNow = ownedKeysAnnotation(desired)[OWNED_PARAMETERS_ANNOTATION];
  return ownedBefore !== ownedNow || Object.entries(desired).some(([k, v]) => observed?.[k] !== v);
}
