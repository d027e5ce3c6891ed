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

/**
 * The optional CNPG Cluster fields pgfsm owns once it sends them (storage class, WAL volume, scheduling,
 * monitoring), remembered as for the parameters: server-side apply removes a field pgfsm stops sending only
 * because pgfsm owned it, so a field it no longer sends is drift only if it is listed here; the same field set by
 * someone else while pgfsm sends nothing there is theirs, and never drift. Absent while pgfsm sends none of them,
 * so clusters that use none carry no annotation.
 */
export const OWNED_FIELDS_ANNOTATION = 'pgfsm.io/owned-fields';

/** The listed fields of an object's annotations (none when it has no such annotation). */
export const ownedFieldsOf = (annotations: Record<string, string> | undefined): Set<string> =>
  new Set((annotations?.[OWNED_FIELDS_ANNOTATION] ?? '').split(',').filter((field) => field.length > 0));

export const ownedFieldsAnnotation = (fields: readonly string[]): Record<string, string> =>
  fields.length > 0 ? { [OWNED_FIELDS_ANNOTATION]: [...fields].sort().join(',') } : {};
