/**
 * The privileges of a PostgresDatabase's users (src/operator/postgres/privileges.ts): the statements and the
 * digest are pure and checked as text; applyPrivileges runs against a closed loopback port, and against a
 * fake PostgreSQL server on 127.0.0.1 that speaks just enough of the wire protocol (TLS with a self-signed
 * certificate, as CloudNativePG's own CA would look to pgfsm; startup, password, simple queries) to show what
 * the client sends, that errors keep their SQLSTATE and lose the password, and that the connection is closed.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { type AddressInfo, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TLSSocket } from 'node:tls';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  applyPrivileges,
  PrivilegeError,
  type PrivilegePlan,
  planDigest,
  privilegeStatements,
} from '../../src/operator/postgres/privileges.ts';

const plan: PrivilegePlan = {
  database: 'app',
  owner: 'app_owner',
  schemas: ['public', 'app'],
  users: [
    { name: 'writer', access: 'readWrite' },
    { name: 'reader', access: 'readOnly' },
  ],
};

const PASSWORD = 's3cret-superuser-password';

/** Index of the first statement that equals `statement`; fails the test when there is none. */
function indexOf(statements: readonly string[], statement: string): number {
  const i = statements.indexOf(statement);
  expect(i, `missing: ${statement}`).toBeGreaterThanOrEqual(0);
  return i;
}

describe('privilegeStatements', () => {
  const statements = privilegeStatements(plan);

  it('keeps PUBLIC from creating in every schema, before any user', () => {
    expect(statements.slice(0, 2)).toEqual([
      'REVOKE CREATE ON SCHEMA "public" FROM PUBLIC',
      'REVOKE CREATE ON SCHEMA "app" FROM PUBLIC',
    ]);
  });

  it('grants the readWrite user writes, creation and defaults for the owner', () => {
    for (const s of ['"public"', '"app"']) {
      indexOf(statements, `GRANT USAGE, CREATE ON SCHEMA ${s} TO "writer"`);
      indexOf(
        statements,
        `GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER ON ALL TABLES IN SCHEMA ${s} TO "writer"`,
      );
      indexOf(statements, `GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA ${s} TO "writer"`);
      indexOf(
        statements,
        `ALTER DEFAULT PRIVILEGES FOR ROLE "app_owner" IN SCHEMA ${s} GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER ON TABLES TO "writer"`,
      );
      indexOf(
        statements,
        `ALTER DEFAULT PRIVILEGES FOR ROLE "app_owner" IN SCHEMA ${s} GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO "writer"`,
      );
    }
    indexOf(statements, 'GRANT CONNECT, TEMPORARY ON DATABASE "app" TO "writer"');
  });

  it('grants the readOnly user reads, with defaults for the owner and for every readWrite user', () => {
    for (const s of ['"public"', '"app"']) {
      indexOf(statements, `GRANT USAGE ON SCHEMA ${s} TO "reader"`);
      indexOf(statements, `GRANT SELECT ON ALL TABLES IN SCHEMA ${s} TO "reader"`);
      indexOf(statements, `GRANT SELECT ON ALL SEQUENCES IN SCHEMA ${s} TO "reader"`);
      for (const creator of ['"app_owner"', '"writer"']) {
        indexOf(
          statements,
          `ALTER DEFAULT PRIVILEGES FOR ROLE ${creator} IN SCHEMA ${s} GRANT SELECT ON TABLES TO "reader"`,
        );
        indexOf(
          statements,
          `ALTER DEFAULT PRIVILEGES FOR ROLE ${creator} IN SCHEMA ${s} GRANT SELECT ON SEQUENCES TO "reader"`,
        );
      }
    }
    indexOf(statements, 'GRANT CONNECT, TEMPORARY ON DATABASE "app" TO "reader"');
    const readerStatements = statements.filter((s) => s.endsWith('TO "reader"'));
    expect(readerStatements.some((s) => /INSERT|UPDATE|DELETE|TRUNCATE|CREATE/.test(s))).toBe(false);
  });

  it('revokes everything of the other level before granting, user by user', () => {
    for (const user of ['"reader"', '"writer"']) {
      const revokes = [
        `REVOKE ALL ON ALL TABLES IN SCHEMA "public" FROM ${user}`,
        `REVOKE ALL ON ALL SEQUENCES IN SCHEMA "public" FROM ${user}`,
        `REVOKE CREATE ON SCHEMA "public" FROM ${user}`,
        `ALTER DEFAULT PRIVILEGES FOR ROLE "app_owner" IN SCHEMA "public" REVOKE ALL ON TABLES FROM ${user}`,
        `ALTER DEFAULT PRIVILEGES FOR ROLE "app_owner" IN SCHEMA "public" REVOKE ALL ON SEQUENCES FROM ${user}`,
        `REVOKE ALL ON ALL TABLES IN SCHEMA "app" FROM ${user}`,
        `REVOKE ALL ON ALL SEQUENCES IN SCHEMA "app" FROM ${user}`,
        `REVOKE CREATE ON SCHEMA "app" FROM ${user}`,
      ].map((s) => indexOf(statements, s));
      const grants = statements.flatMap((s, i) => (s.startsWith('GRANT') && s.endsWith(`TO ${user}`) ? [i] : []));
      expect(grants.length).toBeGreaterThan(0);
      expect(Math.max(...revokes)).toBeLessThan(Math.min(...grants));
    }
  });

  it('treats users in name order, each block of revokes and grants after the previous one', () => {
    const lastReader = statements.findLastIndex((s) => s.includes('"reader"') && !s.includes('FOR ROLE "reader"'));
    const firstWriter = statements.findIndex((s) => /(TO|FROM) "writer"$/.test(s));
    expect(lastReader).toBeLessThan(firstWriter);
  });

  it('quotes identifiers with quotes or upper case', () => {
    const odd = privilegeStatements({
      database: 'My DB',
      owner: 'Owner',
      schemas: ['Sales'],
      users: [
        { name: 'we"ird', access: 'readOnly' },
        { name: 'Writer', access: 'readWrite' },
      ],
    });
    indexOf(odd, 'GRANT CONNECT, TEMPORARY ON DATABASE "My DB" TO "we""ird"');
    indexOf(odd, 'GRANT SELECT ON ALL TABLES IN SCHEMA "Sales" TO "we""ird"');
    indexOf(odd, 'ALTER DEFAULT PRIVILEGES FOR ROLE "Writer" IN SCHEMA "Sales" GRANT SELECT ON TABLES TO "we""ird"');
    indexOf(odd, 'ALTER DEFAULT PRIVILEGES FOR ROLE "Owner" IN SCHEMA "public" GRANT SELECT ON TABLES TO "we""ird"');
    indexOf(odd, 'REVOKE CREATE ON SCHEMA "Sales" FROM "Writer"');
    // Nothing unquoted: every identifier sits between double quotes, so none shows up bare.
    for (const bare of [' we"ird', ' Writer', ' Owner', ' Sales', ' My DB']) {
      expect(odd.filter((s) => s.includes(bare))).toEqual([]);
    }
  });

  it("always includes 'public', first, then the other schemas sorted, each once", () => {
    const schemasOf = (schemas: string[]) =>
      privilegeStatements({ ...plan, schemas })
        .filter((s) => s.endsWith('FROM PUBLIC'))
        .map((s) => s.replace(/^REVOKE CREATE ON SCHEMA (.*) FROM PUBLIC$/, '$1'));
    expect(schemasOf([])).toEqual(['"public"']);
    expect(schemasOf(['b', 'a'])).toEqual(['"public"', '"a"', '"b"']);
    expect(schemasOf(['b', 'public', 'a', 'b'])).toEqual(['"public"', '"a"', '"b"']);
  });

  it('is the same for the same plan, whatever the order of users and schemas', () => {
    const reordered = { ...plan, schemas: ['app', 'public'], users: [...plan.users].reverse() };
    expect(privilegeStatements(reordered)).toEqual(statements);
  });

  it('refuses plans it cannot grant', () => {
    expect(() => privilegeStatements({ ...plan, users: [{ name: 'app_owner', access: 'readOnly' }] })).toThrow(
      /database owner/,
    );
    expect(() =>
      privilegeStatements({
        ...plan,
        users: [
          { name: 'x', access: 'readOnly' },
          { name: 'x', access: 'readWrite' },
        ],
      }),
    ).toThrow(/listed twice/);
    expect(() => privilegeStatements({ ...plan, schemas: [''] })).toThrow(/empty name/);
  });
});

describe('planDigest', () => {
  it('is 16 hex characters, stable under reordering of users and schemas', () => {
    const digest = planDigest(plan);
    expect(digest).toMatch(/^[0-9a-f]{16}$/);
    expect(planDigest({ ...plan, users: [...plan.users].reverse(), schemas: ['app', 'public', 'app'] })).toBe(digest);
    expect(planDigest({ ...plan, schemas: ['app'] })).toBe(digest);
  });

  it('changes with an access level, a user, a schema, the owner or the database', () => {
    const digest = planDigest(plan);
    const changed: PrivilegePlan[] = [
      {
        ...plan,
        users: [
          { name: 'writer', access: 'readWrite' },
          { name: 'reader', access: 'readWrite' },
        ],
      },
      { ...plan, users: [{ name: 'writer', access: 'readWrite' }] },
      { ...plan, schemas: ['public'] },
      { ...plan, owner: 'someone_else' },
      { ...plan, database: 'other' },
    ];
    for (const other of changed) expect(planDigest(other)).not.toBe(digest);
  });
});

// --- applyPrivileges -------------------------------------------------------------------------------------

/** A port on 127.0.0.1 that nothing listens on: opened by a server of ours, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function rejection(promise: Promise<unknown>): Promise<PrivilegeError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(PrivilegeError);
  return error as PrivilegeError;
}

describe('applyPrivileges against a closed port', () => {
  it('rejects with a PrivilegeError that names the database, without the password or a SQLSTATE', async () => {
    const port = await closedPort();
    const error = await rejection(
      applyPrivileges({ host: '127.0.0.1', port, user: 'postgres', password: PASSWORD }, plan),
    );
    expect(error.message).toMatch(/^applying privileges on database "app": .*ECONNREFUSED/);
    expect(error.message).not.toContain(PASSWORD);
    expect(error.stack ?? '').not.toContain(PASSWORD);
    expect(error.code).toBeUndefined();
  });

  it("redacts the password even when it shows up in pg's own message", async () => {
    const port = await closedPort();
    // A password that is part of the connection error's text: the message must not give it away.
    const password = `127.0.0.1:${port}`;
    const error = await rejection(applyPrivileges({ host: '127.0.0.1', port, user: 'postgres', password }, plan));
    expect(error.message).toContain('ECONNREFUSED ***');
    expect(error.message).not.toContain(password);
  });
});

/** What the fake server saw of one connection. */
interface Seen {
  startup: Record<string, string>;
  password?: string;
  queries: string[];
  terminated: boolean;
}

interface Behaviour {
  /** Ask for a cleartext password, then refuse it with this error. */
  refusePassword?: { code: string; message: string };
  /** An error for a query, or undefined to let it succeed. */
  failQuery?: (sql: string) => { code: string; message: string } | undefined;
  /** Accept the TCP connection and never answer. */
  silent?: boolean;
}

function message(type: string, body: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeInt32BE(body.length + 4);
  return Buffer.concat([Buffer.from(type), length, body]);
}

const int32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
};
const cstring = (s: string) => Buffer.from(`${s}\0`);
const authentication = (kind: number) => message('R', int32(kind));
const ready = (status: 'I' | 'T' | 'E') => message('Z', Buffer.from(status));
const errorResponse = (code: string, text: string) =>
  message(
    'E',
    Buffer.concat([
      Buffer.from('S'),
      cstring('ERROR'),
      Buffer.from('C'),
      cstring(code),
      Buffer.from('M'),
      cstring(text),
      Buffer.from([0]),
    ]),
  );

/** Key/value pairs of a StartupMessage body (after length and protocol version), up to the final NUL. */
function startupParameters(body: Buffer): Record<string, string> {
  const parts = body.toString('utf8').split('\0');
  const parameters: Record<string, string> = {};
  for (let i = 0; i + 1 < parts.length && parts[i] !== ''; i += 2) parameters[parts[i] ?? ''] = parts[i + 1] ?? '';
  return parameters;
}

/** One client's conversation after TLS: the startup message, then typed messages. */
function converse(socket: TLSSocket, behaviour: Behaviour, seen: Seen): void {
  let buffer = Buffer.alloc(0);
  let started = false;
  let status: 'I' | 'T' | 'E' = 'I';
  const answerQuery = (sql: string) => {
    seen.queries.push(sql);
    const failure = behaviour.failQuery?.(sql);
    if (failure) {
      status = 'E';
      socket.write(Buffer.concat([errorResponse(failure.code, failure.message), ready(status)]));
      return;
    }
    if (sql === 'BEGIN') status = 'T';
    if (sql === 'COMMIT' || sql === 'ROLLBACK') status = 'I';
    socket.write(Buffer.concat([message('C', cstring(sql.split(' ')[0] ?? '')), ready(status)]));
  };
  const handle = (type: string, body: Buffer) => {
    if (type === 'p') {
      seen.password = body.toString('utf8').replace(/\0$/, '');
      const refusal = behaviour.refusePassword;
      if (refusal) socket.end(errorResponse(refusal.code, refusal.message));
      else socket.write(Buffer.concat([authentication(0), ready('I')]));
    } else if (type === 'Q') answerQuery(body.toString('utf8').replace(/\0$/, ''));
    else if (type === 'X') {
      seen.terminated = true;
      socket.end();
    }
  };
  socket.on('data', (chunk: Buffer) => {
    buffer = Buffer.concat([buffer, chunk]);
    for (;;) {
      if (!started) {
        if (buffer.length < 4 || buffer.length < buffer.readInt32BE(0)) return;
        const length = buffer.readInt32BE(0);
        seen.startup = startupParameters(buffer.subarray(8, length));
        buffer = buffer.subarray(length);
        started = true;
        socket.write(behaviour.refusePassword ? authentication(3) : Buffer.concat([authentication(0), ready('I')]));
        continue;
      }
      if (buffer.length < 5 || buffer.length < 1 + buffer.readInt32BE(1)) return;
      const length = buffer.readInt32BE(1);
      handle(String.fromCharCode(buffer[0] ?? 0), buffer.subarray(5, 1 + length));
      buffer = buffer.subarray(1 + length);
    }
  });
  socket.on('error', () => undefined);
}

let certDir: string;
let tlsCredentials: { cert: Buffer; key: Buffer };
/** The fake servers of a test and their open connections, closed after it. */
const servers: { server: Server; sockets: Set<Socket> }[] = [];

beforeAll(() => {
  // Self-signed and trusted by nobody: how CloudNativePG's server certificate looks to pgfsm.
  certDir = mkdtempSync(join(tmpdir(), 'pgfsm-privileges-'));
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=pgfsm-test-postgres',
      '-keyout',
      'server.key',
      '-out',
      'server.crt',
    ],
    { cwd: certDir, stdio: 'ignore' },
  );
  tlsCredentials = { cert: readFileSync(join(certDir, 'server.crt')), key: readFileSync(join(certDir, 'server.key')) };
});

afterEach(async () => {
  const closing = servers.splice(0).map(({ server, sockets }) => {
    // close() waits for open connections: a silent server's would keep it waiting.
    for (const socket of sockets) socket.destroy();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  await Promise.all(closing);
});

afterAll(() => {
  rmSync(certDir, { recursive: true, force: true });
});

/** A fake PostgreSQL server on 127.0.0.1 that insists on TLS (as `hostssl` in pg_hba would). */
async function fakePostgres(behaviour: Behaviour = {}): Promise<{ port: number; seen: Seen[] }> {
  const seen: Seen[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    if (behaviour.silent) return;
    const conversation: Seen = { startup: {}, queries: [], terminated: false };
    seen.push(conversation);
    socket.once('data', (sslRequest: Buffer) => {
      // SSLRequest: length 8, code 80877103. Answer 'S' and start TLS on the same socket.
      expect(sslRequest.readInt32BE(4)).toBe(80877103);
      socket.write('S');
      converse(new TLSSocket(socket, { isServer: true, ...tlsCredentials }), behaviour, conversation);
    });
  });
  servers.push({ server, sockets });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, seen };
}

const target = (port: number) => ({ host: '127.0.0.1', port, user: 'postgres', password: PASSWORD });

describe('applyPrivileges against a fake server on 127.0.0.1', () => {
  it('connects over TLS to the plan database as pgfsm with the timeouts, runs the statements in one transaction and closes', async () => {
    const { port, seen } = await fakePostgres();
    await applyPrivileges(target(port), plan);
    expect(seen).toHaveLength(1);
    const [conversation] = seen;
    expect(conversation?.startup).toMatchObject({
      user: 'postgres',
      database: 'app',
      application_name: 'pgfsm',
      statement_timeout: '10000',
      // Pinned in the startup message, so a search_path the database's owner set cannot reorder name lookup.
      options: '-c search_path=pg_catalog,pg_temp',
    });
    expect(conversation?.queries).toEqual(['BEGIN', ...privilegeStatements(plan), 'COMMIT']);
    await vi.waitFor(() => expect(conversation?.terminated).toBe(true));
  });

  it('passes a statement timeout of the caller', async () => {
    const { port, seen } = await fakePostgres();
    await applyPrivileges(target(port), plan, { statementTimeoutMs: 2_500 });
    expect(seen[0]?.startup.statement_timeout).toBe('2500');
  });

  it('rolls back at the first failing statement, keeps its SQLSTATE and closes', async () => {
    const { port, seen } = await fakePostgres({
      failQuery: (sql) =>
        sql.includes('TO "reader"') ? { code: '42704', message: 'role "reader" does not exist' } : undefined,
    });
    const error = await rejection(applyPrivileges(target(port), plan));
    expect(error.code).toBe('42704');
    expect(error.message).toBe('applying privileges on database "app": role "reader" does not exist');
    const queries = seen[0]?.queries ?? [];
    expect(queries.at(-1)).toBe('ROLLBACK');
    expect(queries).not.toContain('COMMIT');
    // "writer" sorts after "reader": the failure stopped everything that followed.
    expect(queries.filter((q) => /(TO|FROM) "writer"$/.test(q))).toEqual([]);
    await vi.waitFor(() => expect(seen[0]?.terminated).toBe(true));
  });

  it("hides the password sent to the server when the server's error repeats it", async () => {
    const { port, seen } = await fakePostgres({
      refusePassword: { code: '28P01', message: `password authentication failed (got "${PASSWORD}")` },
    });
    const error = await rejection(applyPrivileges(target(port), plan));
    expect(seen[0]?.password).toBe(PASSWORD);
    expect(error.code).toBe('28P01');
    expect(error.message).toBe('applying privileges on database "app": password authentication failed (got "***")');
    expect(error.stack ?? '').not.toContain(PASSWORD);
  });

  it('gives up connecting after the connect timeout', async () => {
    const { port } = await fakePostgres({ silent: true });
    const started = Date.now();
    const error = await rejection(applyPrivileges(target(port), plan, { connectTimeoutMs: 200 }));
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(error.message).toMatch(/^applying privileges on database "app": .*timeout/i);
    expect(error.message).not.toContain(PASSWORD);
  });

  it('refuses an invalid plan without connecting', async () => {
    const { port, seen } = await fakePostgres();
    const error = await rejection(
      applyPrivileges(target(port), { ...plan, users: [{ name: 'app_owner', access: 'readOnly' }] }),
    );
    expect(error.message).toMatch(/is the database owner/);
    expect(seen).toEqual([]);
  });
});
