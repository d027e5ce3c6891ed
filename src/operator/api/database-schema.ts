/**
 * The PostgresDatabase API (pgfsm.io/v1alpha1): an application's database on a PostgresCluster, with an
 * owner role, application users at a privilege level, and a connection Secret per role. Part of the one
 * schema source (schema.ts registers it with the CRD generator), so its types and its CRD cannot drift.
 *
 * Role and database names are PostgreSQL identifiers in their simplest form (lower-case letters, digits and
 * '_', not starting with a digit): they go unquoted into connection strings, Secret names and `psql`
 * command lines, and a name that needs quoting in SQL is a trap for every application that uses it.
 */
import { type Static, Type } from '@sinclair/typebox';
import {
  MAX_ROLE_NAME_BYTES,
  POSTGRES_RESERVED_ROLE_NAMES,
  RESERVED_ROLE_NAMES,
  RESERVED_ROLE_PREFIXES,
} from './cnpg-rules.ts';
import { cel, DeletionPolicy, lifecycleStatusProperties } from './schema-parts.ts';

/** A plain PostgreSQL identifier: needs no quoting anywhere. */
export const PLAIN_IDENTIFIER = '^[a-z_][a-z0-9_]*$';

/** Databases PostgreSQL and CloudNativePG keep for themselves. */
export const RESERVED_DATABASE_NAMES = ['postgres', 'template0', 'template1'] as const;

/** Most application users one PostgresDatabase may have. */
export const MAX_DATABASE_USERS = 16;

const celList = (values: readonly string[]) => `[${values.map((value) => `'${value}'`).join(', ')}]`;

const immutable = (field: string) => cel('self == oldSelf', `${field} is immutable`);

const identifierRules = (field: string) => [
  cel(
    `self.matches('${PLAIN_IDENTIFIER}')`,
    `${field} must be a plain PostgreSQL identifier: lower-case letters, digits and '_', not starting with a digit`,
  ),
];

/** A role pgfsm creates for the database: CNPG's and PostgreSQL's reserved names are refused here, not on a node. */
const RoleName = (field: string, description: string, extraRules: ReturnType<typeof cel>[] = []) =>
  Type.String({
    minLength: 1,
    maxLength: MAX_ROLE_NAME_BYTES,
    description,
    'x-kubernetes-validations': [
      ...extraRules,
      ...identifierRules(field),
      cel(
        `!(self in ${celList([...RESERVED_ROLE_NAMES, ...POSTGRES_RESERVED_ROLE_NAMES])}) && ${RESERVED_ROLE_PREFIXES.map((p) => `!self.startsWith('${p}')`).join(' && ')}`,
        `${field} cannot be ${[...RESERVED_ROLE_NAMES, ...POSTGRES_RESERVED_ROLE_NAMES].join(', ')} nor start with ${RESERVED_ROLE_PREFIXES.join(' or ')}: CloudNativePG and PostgreSQL reserve them`,
      ),
    ],
  });

export const Access = Type.Union([Type.Literal('readWrite'), Type.Literal('readOnly')], {
  description:
    'readWrite: read and write every table, create tables in the schemas. readOnly: read every table, ' +
    'including tables created later; every write is refused',
});

export const DatabaseUser = Type.Object({
  name: RoleName('users[].name', 'The role name; also the user name in its connection Secret'),
  access: Type.Optional({ ...Access, default: 'readWrite' }),
});

const NamedObject = (what: string) =>
  Type.Object({
    name: Type.String({
      minLength: 1,
      maxLength: 63,
      description: `The ${what}'s name`,
      'x-kubernetes-validations': identifierRules(`${what} name`),
    }),
  });

export const PostgresDatabaseSpec = Type.Object(
  {
    cluster: Type.String({
      minLength: 1,
      maxLength: 63,
      description: 'The PostgresCluster, in the same namespace, that holds the database; immutable',
      'x-kubernetes-validations': [immutable('cluster')],
    }),
    name: Type.String({
      minLength: 1,
      maxLength: 63,
      description: 'The database name in PostgreSQL; immutable',
      'x-kubernetes-validations': [
        immutable('name'),
        ...identifierRules('name'),
        cel(
          `!(self in ${celList(RESERVED_DATABASE_NAMES)})`,
          `name cannot be ${RESERVED_DATABASE_NAMES.join(', ')}: PostgreSQL keeps them`,
        ),
      ],
    }),
    owner: RoleName(
      'owner',
      'The role that owns the database and its schemas; immutable. Its connection Secret is the way in',
      [immutable('owner')],
    ),
    users: Type.Optional(
      Type.Array(DatabaseUser, {
        maxItems: MAX_DATABASE_USERS,
        description: 'Application users besides the owner, each with a connection Secret of its own',
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['name'],
      }),
    ),
    schemas: Type.Optional(
      Type.Array(NamedObject('schema'), {
        maxItems: 32,
        description: 'Schemas to create, owned by the owner; users get their privileges on these and on public',
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['name'],
      }),
    ),
    extensions: Type.Optional(
      Type.Array(NamedObject('extension'), {
        maxItems: 32,
        description: 'Extensions to create in the database (they must be available in the PostgreSQL image)',
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['name'],
      }),
    ),
    deletionPolicy: Type.Optional({
      ...DeletionPolicy,
      default: 'Retain',
      description:
        'Retain (default): deleting the PostgresDatabase keeps the database, its roles and their Secrets. ' +
        'Delete: drops the database and its roles and deletes the Secrets',
    }),
  },
  {
    description: 'The database an application wants: its cluster, its name, its owner and its users',
    'x-kubernetes-validations': [
      cel(
        '!has(self.users) || self.users.all(u, u.name != self.owner)',
        'users[].name must differ from owner: the owner has a Secret of its own',
        '.users',
      ),
    ],
  },
);

/** The phases the PostgresDatabase machine has: it is never Degraded nor Suspended. */
export const DatabasePhase = Type.Union(
  ['Pending', 'Provisioning', 'Ready', 'Failed', 'Deleting'].map((p) => Type.Literal(p)),
);

export const DatabaseSecretStatus = Type.Object(
  {
    user: Type.String({ description: 'The role, and the user name in the Secret' }),
    secretName: Type.String({ description: 'The connection Secret, in the same namespace' }),
    access: Type.Union([Type.Literal('owner'), Type.Literal('readWrite'), Type.Literal('readOnly')], {
      description: "The role's privileges: owner, readWrite or readOnly",
    }),
  },
  { description: "One role's connection Secret" },
);

export const PostgresDatabaseStatus = Type.Object(
  {
    ...lifecycleStatusProperties(DatabasePhase),
    endpoint: Type.Optional(
      Type.Object(
        {
          host: Type.String({ description: 'The read-write host the Secrets name' }),
          port: Type.String({ description: 'The port the Secrets name' }),
          pooled: Type.Boolean({ description: 'true when the host is the cluster’s PgBouncer pooler' }),
        },
        { description: 'Where the connection Secrets point, as the cluster last published it' },
      ),
    ),
    secrets: Type.Optional(
      Type.Array(DatabaseSecretStatus, {
        description: 'One connection Secret per role: the owner first, then the users',
      }),
    ),
    claims: Type.Optional(
      Type.Object(
        {
          database: Type.Optional(Type.String({ description: 'The database name it holds on its cluster' })),
          roles: Type.Array(Type.String(), { description: 'The role names it holds on its cluster' }),
          secrets: Type.Array(Type.String(), { description: 'The Secret names it holds in the namespace' }),
        },
        {
          description:
            'The names this PostgresDatabase holds: nothing is created, pushed, granted or dropped for a name ' +
            'another resource holds, and a name held here stays held while the spec still asks for it',
        },
      ),
    ),
  },
  { description: 'What pgfsm last observed and decided; written by the operator only' },
);

export type Access = Static<typeof Access>;
export type DatabaseUser = Static<typeof DatabaseUser>;
export type PostgresDatabaseSpec = Static<typeof PostgresDatabaseSpec>;
export type PostgresDatabaseStatus = Static<typeof PostgresDatabaseStatus>;
export type DatabaseSecretStatus = Static<typeof DatabaseSecretStatus>;
