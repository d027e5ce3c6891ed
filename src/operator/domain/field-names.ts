/**
 * How a refusal names the field it is about: a cluster's own field as `spec.<path>`, a class's as
 * `class <name> spec.<path>`, so a person knows which object to edit (docs/cnpg-admission.md).
 */

/** A field of the class, named as the merge check names class fields. */
export const classField = (clusterClass: { metadata: { name: string } }, path: string) =>
  `class ${clusterClass.metadata.name} spec.${path}`;
