/**
 * Builds the pgfsm CustomResourceDefinitions (apiextensions.k8s.io/v1) from the TypeBox schemas in schema.ts,
 * so the types the operator compiles against and the schema the API server enforces come from one source.
 * Pure: no I/O. src/tools/generate/crds.ts writes `renderCrdFiles()` to deploy/crds/.
 */
import type { TSchema } from '@sinclair/typebox';
import { stringify } from 'yaml';
import { DNS_1035_LABEL } from '../../operator/api/cnpg-rules.ts';
import { GROUP, MAX_CLUSTER_NAME_LENGTH, schemas, VERSION } from '../../operator/api/schema.ts';

export interface ValidationRule {
  rule: string;
  message?: string;
  messageExpression?: string;
  fieldPath?: string;
  /** The rule also runs on create, with `oldSelf` an optional that has no value there. */
  optionalOldSelf?: boolean;
}

/** The subset of Kubernetes' JSONSchemaProps that a structural schema generated from TypeBox can contain. */
export interface StructuralSchema {
  description?: string;
  type?: 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean';
  format?: string;
  enum?: unknown[];
  default?: unknown;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  minItems?: number;
  maxItems?: number;
  maxProperties?: number;
  required?: string[];
  items?: StructuralSchema;
  properties?: Record<string, StructuralSchema>;
  additionalProperties?: StructuralSchema;
  'x-kubernetes-validations'?: ValidationRule[];
  'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map';
  'x-kubernetes-list-map-keys'?: string[];
  'x-kubernetes-map-type'?: 'atomic' | 'granular';
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-int-or-string'?: boolean;
}

export interface PrinterColumn {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  jsonPath: string;
  priority?: number;
}

export interface CustomResourceDefinition {
  apiVersion: 'apiextensions.k8s.io/v1';
  kind: 'CustomResourceDefinition';
  metadata: { name: string };
  spec: {
    group: string;
    names: {
      kind: string;
      listKind: string;
      plural: string;
      singular: string;
      shortNames: string[];
      categories: string[];
    };
    scope: 'Namespaced' | 'Cluster';
    versions: {
      name: string;
      served: boolean;
      storage: boolean;
      subresources?: { status: Record<string, never> };
      additionalPrinterColumns: PrinterColumn[];
      schema: { openAPIV3Schema: StructuralSchema };
    }[];
  };
}

/**
 * Keywords a structural schema may carry, in the order they are written: a fixed order keeps the generated YAML
 * stable however TypeBox happens to order its keys. Anything else left after conversion makes the generator throw,
 * so a schema.ts change that Kubernetes cannot express fails here rather than at `kubectl apply`.
 */
const KEYWORD_ORDER = [
  'description',
  'type',
  'format',
  'enum',
  'default',
  'minimum',
  'maximum',
  'minLength',
  'maxLength',
  'pattern',
  'minItems',
  'maxItems',
  'maxProperties',
  'required',
  'items',
  'properties',
  'additionalProperties',
  'x-kubernetes-validations',
  'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys',
  'x-kubernetes-map-type',
  'x-kubernetes-preserve-unknown-fields',
  'x-kubernetes-int-or-string',
] as const;

/** The key pattern TypeBox emits for `Type.Record(Type.String(), X)`. */
const ANY_STRING_KEY = '^(.*)$';
const INT32_LIMIT = 2 ** 31;

type JsonNode = Record<string, unknown>;

/**
 * Turns a TypeBox JSON schema into a Kubernetes *structural* schema. This exists because TypeBox emits plain JSON
 * Schema (`const`, `anyOf` of literals, `patternProperties` for records) that the API server rejects or cannot
 * prune with, and no maintained npm package does this conversion. Only the shapes schema.ts uses are supported.
 */
export function toStructuralSchema(schema: TSchema, path = '<root>'): StructuralSchema {
  // Object.entries drops TypeBox's symbol keys (Kind, Optional); the copy lets us rewrite keywords freely.
  const node: JsonNode = Object.fromEntries(Object.entries(schema));
  delete node.$id;
  delete node.$schema;
  if ('const' in node) {
    node.enum = [node.const];
    delete node.const;
  }
  if (Array.isArray(node.anyOf)) {
    Object.assign(node, literalUnion(node.anyOf as JsonNode[], path));
    delete node.anyOf;
  }
  if (node.patternProperties !== undefined) {
    node.additionalProperties = recordValue(node.patternProperties as JsonNode, path);
    delete node.patternProperties;
  }
  // Kubernetes rejects `additionalProperties: false`; pruning of unknown fields already gives that behaviour.
  if (node.additionalProperties === false) delete node.additionalProperties;
  if (node.type === 'integer' && node.format === undefined && fitsInt32(node)) node.format = 'int32';

  const unsupported = Object.keys(node).filter((key) => !(KEYWORD_ORDER as readonly string[]).includes(key));
  if (unsupported.length > 0) throw new Error(`${path}: no structural CRD equivalent for ${unsupported.join(', ')}`);
  if (node.type === undefined && !node['x-kubernetes-int-or-string'] && !node['x-kubernetes-preserve-unknown-fields']) {
    throw new Error(`${path}: has no type, so the CRD schema would not be structural`);
  }

  const out: JsonNode = {};
  for (const key of KEYWORD_ORDER) {
    const value = node[key];
    if (value === undefined) continue;
    if (key === 'properties') {
      const entries = Object.entries(value as Record<string, TSchema>);
      out[key] = Object.fromEntries(
        entries.map(([name, child]) => [name, toStructuralSchema(child, `${path}.${name}`)]),
      );
    } else if (key === 'items') {
      out[key] = toStructuralSchema(value as TSchema, `${path}[]`);
    } else if (key === 'additionalProperties') {
      out[key] = toStructuralSchema(value as TSchema, `${path}[*]`);
    } else {
      // Copied so that a caller editing the CRD object cannot change the shared TypeBox schema.
      out[key] = structuredClone(value);
    }
  }
  return out as StructuralSchema;
}

/** `Type.Union` of `Type.Literal`s → a single-typed enum; other unions have no structural form. */
function literalUnion(members: JsonNode[], path: string): JsonNode {
  const types = new Set(members.map((member) => member.type));
  if (types.size !== 1 || !members.every((member) => 'const' in member)) {
    throw new Error(`${path}: only unions of literals of one type can become a structural enum`);
  }
  return { type: members[0]?.type, enum: members.map((member) => member.const) };
}

/** `Type.Record(Type.String(), X)` → X, to be used as `additionalProperties`. */
function recordValue(patternProperties: JsonNode, path: string): unknown {
  const [pattern, ...rest] = Object.keys(patternProperties);
  if (pattern !== ANY_STRING_KEY || rest.length > 0) {
    throw new Error(`${path}: only records keyed by any string can become additionalProperties`);
  }
  return patternProperties[pattern];
}

function fitsInt32({ minimum, maximum }: JsonNode): boolean {
  return typeof minimum === 'number' && typeof maximum === 'number' && minimum >= -INT32_LIMIT && maximum < INT32_LIMIT;
}

/** The whole-object schema: Kubernetes wants apiVersion/kind/metadata declared beside spec and status. */
function rootSchema(
  kind: keyof typeof schemas,
  description: string,
  validations: ValidationRule[] = [],
): StructuralSchema {
  const { spec, status } = schemas[kind];
  return {
    description,
    type: 'object',
    required: ['spec'],
    properties: {
      apiVersion: { description: `${GROUP}/${VERSION}`, type: 'string' },
      kind: { description: kind, type: 'string' },
      // Kubernetes forbids anything but a type here; kubectl explain shows ObjectMeta's own description.
      metadata: { type: 'object' },
      spec: toStructuralSchema(spec, 'spec'),
      ...(status ? { status: toStructuralSchema(status, 'status') } : {}),
    },
    ...(validations.length > 0 ? { 'x-kubernetes-validations': validations } : {}),
  };
}

const AGE_COLUMN: PrinterColumn = { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' };
const READY_CONDITION = '.status.conditions[?(@.type=="Ready")]';

/** One CRD of ours: its names from the kind, one served and stored version, its columns and its schema. */
function crdOf(options: {
  kind: keyof typeof schemas;
  /** What `kubectl explain <kind>` says the kind is. */
  description: string;
  shortName: string;
  scope: 'Namespaced' | 'Cluster';
  columns: PrinterColumn[];
  validations?: ValidationRule[];
}): CustomResourceDefinition {
  const singular = options.kind.toLowerCase();
  const plural = `${singular}${singular.endsWith('s') ? 'es' : 's'}`;
  const withStatus = schemas[options.kind].status !== undefined;
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.${GROUP}` },
    spec: {
      group: GROUP,
      names: {
        kind: options.kind,
        listKind: `${options.kind}List`,
        plural,
        singular,
        shortNames: [options.shortName],
        categories: ['pgfsm'],
      },
      scope: options.scope,
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          ...(withStatus ? { subresources: { status: {} } } : {}),
          additionalPrinterColumns: [...options.columns, AGE_COLUMN],
          schema: { openAPIV3Schema: rootSchema(options.kind, options.description, options.validations) },
        },
      ],
    },
  };
}

/**
 * The name rules judge a name at creation only: it is immutable, and a rule on the root is evaluated again on every
 * later write (status and finalizer writes included), so an object stored before the rule existed could otherwise
 * never be updated, not even to report what is wrong with it. Names of children (`<name>-pooler-rw`, a database's
 * `<name>-<role>` Secrets) are derived from it and must stay valid.
 */
const NAME_LENGTH_RULE: ValidationRule = {
  rule: `oldSelf.hasValue() || self.metadata.name.size() <= ${MAX_CLUSTER_NAME_LENGTH}`,
  optionalOldSelf: true,
  message: `metadata.name must be at most ${MAX_CLUSTER_NAME_LENGTH} characters`,
};

const PHASE_AND_READY: PrinterColumn[] = [
  { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
  { name: 'Ready', type: 'string', jsonPath: `${READY_CONDITION}.status` },
  { name: 'Reason', type: 'string', jsonPath: `${READY_CONDITION}.reason` },
];
const STATE_COLUMN: PrinterColumn = { name: 'State', type: 'string', jsonPath: '.status.state', priority: 1 };

export const postgresClusterCrd = (): CustomResourceDefinition =>
  crdOf({
    kind: 'PostgresCluster',
    description:
      'A PostgreSQL cluster for a team, run by pgfsm on CloudNativePG: a superuser Secret, a CNPG Cluster, managed ' +
      'roles, optional PgBouncer Poolers and a ConfigMap of connection endpoints. Its status tells where the ' +
      'lifecycle stands and why (`pgfsm explain` tells more)',
    shortName: 'pgc',
    scope: 'Namespaced',
    columns: [
      { name: 'Class', type: 'string', jsonPath: '.spec.class' },
      ...PHASE_AND_READY,
      { name: 'Primary', type: 'string', jsonPath: '.status.currentPrimary', priority: 1 },
      { name: 'Last Backup', type: 'date', jsonPath: '.status.backup.lastSuccessfulBackupTime', priority: 1 },
      STATE_COLUMN,
    ],
    validations: [
      NAME_LENGTH_RULE,
      {
        // CNPG names the Cluster's Services after it, so it refuses any name that is no DNS-1035 label.
        rule: `oldSelf.hasValue() || self.metadata.name.matches('${DNS_1035_LABEL}')`,
        optionalOldSelf: true,
        message:
          "metadata.name must be a DNS-1035 label: lower-case letters, digits and '-', starting with a letter and ending with a letter or digit (CloudNativePG names Services after it)",
      },
      {
        // On the root, where the name is: a cluster cannot start from its own archive (it has none yet).
        rule: 'oldSelf.hasValue() || !has(self.spec.restore) || !has(self.spec.restore.source.cluster) || self.spec.restore.source.cluster != self.metadata.name',
        optionalOldSelf: true,
        message:
          'spec.restore.source.cluster must name another PostgresCluster: a new cluster has no backups of its own',
      },
    ],
  });

export const postgresClusterClassCrd = (): CustomResourceDefinition =>
  crdOf({
    kind: 'PostgresClusterClass',
    description:
      'A kind of PostgreSQL cluster, cluster-scoped: the defaults every PostgresCluster of the class starts from ' +
      '(instances, version, storage, scheduling, parameters) and its CloudNativePG settings (PgBouncer Poolers)',
    shortName: 'pgcc',
    scope: 'Cluster',
    columns: [
      { name: 'Provisioner', type: 'string', jsonPath: '.spec.provisioner' },
      { name: 'Instances', type: 'integer', jsonPath: '.spec.config.instances' },
      { name: 'Storage', type: 'string', jsonPath: '.spec.config.storage' },
      { name: 'Version', type: 'string', jsonPath: '.spec.config.postgresVersion' },
      { name: 'Pooler', type: 'boolean', jsonPath: '.spec.config.connectionPoolerEnabled' },
    ],
  });

export const postgresDatabaseCrd = (): CustomResourceDefinition =>
  crdOf({
    kind: 'PostgresDatabase',
    description:
      "An application's database on a PostgresCluster of the same namespace: an owner role, application users " +
      'and a connection Secret per role, with a ready uri (never the superuser)',
    shortName: 'pgdb',
    scope: 'Namespaced',
    columns: [
      { name: 'Cluster', type: 'string', jsonPath: '.spec.cluster' },
      { name: 'Database', type: 'string', jsonPath: '.spec.name' },
      { name: 'Owner', type: 'string', jsonPath: '.spec.owner' },
      ...PHASE_AND_READY,
      { name: 'Host', type: 'string', jsonPath: '.status.endpoint.host', priority: 1 },
      STATE_COLUMN,
    ],
    validations: [NAME_LENGTH_RULE],
  });

const CRD_HEADER = '# Generated from src/operator/api/schema.ts by src/tools/generate/crds.ts — do not edit\n';

// lineWidth 0: long CEL rules stay on one line; no aliases: every YAML node stands on its own for kubectl diffs.
const toYaml = (document: object) => CRD_HEADER + stringify(document, { lineWidth: 0, aliasDuplicateObjects: false });

/** The contents of deploy/crds/, by file name: one file per CRD plus the kustomization listing them. */
export function renderCrdFiles(): Record<string, string> {
  const crds = [postgresClusterCrd(), postgresClusterClassCrd(), postgresDatabaseCrd()];
  const files = Object.fromEntries(crds.map((crd) => [`${crd.spec.group}_${crd.spec.names.plural}.yaml`, toYaml(crd)]));
  const kustomization = {
    apiVersion: 'kustomize.config.k8s.io/v1beta1',
    kind: 'Kustomization',
    resources: Object.keys(files),
  };
  return { ...files, 'kustomization.yaml': toYaml(kustomization) };
}
