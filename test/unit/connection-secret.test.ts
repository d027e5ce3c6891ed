/**
 * The values of a PostgresDatabase's connection Secret (src/operator/kubernetes/database-children.ts,
 * `connectionSecretData`): CloudNativePG's app Secret keys, the URLs percent-encoded, the `.pgpass` line
 * escaped as libpq reads it. Pure: no server.
 */
import { describe, expect, it } from 'vitest';
import { connectionSecretData } from '../../src/operator/kubernetes/index.ts';

const template = { username: 'app_owner', host: 'pg-rw.shop.svc', port: '5432', dbname: 'shop' };

/** What libpq does with a `.pgpass` line: split on unescaped `:`, then drop the escaping backslashes. */
function readPgpass(line: string): string[] {
  const fields: string[] = [];
  let field = '';
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c === '\\' && i + 1 < line.length) field += line[++i];
    else if (c === ':') {
      fields.push(field);
      field = '';
    } else field += c;
  }
  return [...fields, field];
}

describe('connectionSecretData', () => {
  it('holds every key of CloudNativePG app Secret, the parts as given', () => {
    const data = connectionSecretData(template, 'Abc123');
    expect(Object.keys(data).sort()).toEqual(
      ['dbname', 'host', 'jdbc-uri', 'password', 'pgpass', 'port', 'uri', 'username'].sort(),
    );
    expect(data).toEqual({
      username: 'app_owner',
      password: 'Abc123',
      host: 'pg-rw.shop.svc',
      port: '5432',
      dbname: 'shop',
      uri: 'postgresql://app_owner:Abc123@pg-rw.shop.svc:5432/shop',
      'jdbc-uri': 'jdbc:postgresql://pg-rw.shop.svc:5432/shop?user=app_owner&password=Abc123',
      pgpass: 'pg-rw.shop.svc:5432:shop:app_owner:Abc123\n',
    });
  });

  it('percent-encodes the password in the URI and the JDBC URL, so that it parses back whole', () => {
    const password = 'p@ss:w/rd?a&b=c%d#e';
    const data = connectionSecretData(template, password);
    expect(data.password).toBe(password);
    expect(data.uri).toBe('postgresql://app_owner:p%40ss%3Aw%2Frd%3Fa%26b%3Dc%25d%23e@pg-rw.shop.svc:5432/shop');
    const uri = new URL(data.uri);
    expect(decodeURIComponent(uri.password)).toBe(password);
    expect(decodeURIComponent(uri.username)).toBe('app_owner');
    expect(uri.hostname).toBe('pg-rw.shop.svc');
    expect(uri.port).toBe('5432');
    expect(uri.pathname).toBe('/shop');

    expect(data['jdbc-uri']).toBe(
      'jdbc:postgresql://pg-rw.shop.svc:5432/shop?user=app_owner&password=p%40ss%3Aw%2Frd%3Fa%26b%3Dc%25d%23e',
    );
    const jdbc = new URL(data['jdbc-uri'].replace(/^jdbc:/, ''));
    expect(jdbc.searchParams.get('password')).toBe(password);
    expect(jdbc.searchParams.get('user')).toBe('app_owner');
    expect([...jdbc.searchParams.keys()]).toEqual(['user', 'password']);
  });

  it('percent-encodes the user name too', () => {
    const data = connectionSecretData({ ...template, username: 'a@b:c' }, 'x');
    expect(data.username).toBe('a@b:c');
    expect(data.uri).toBe('postgresql://a%40b%3Ac:x@pg-rw.shop.svc:5432/shop');
    expect(data['jdbc-uri']).toContain('?user=a%40b%3Ac&password=x');
  });

  it('escapes `:` and `\\` in the .pgpass line, which ends with a newline', () => {
    const password = 'a:b\\c:\\';
    const data = connectionSecretData(template, password);
    expect(data.pgpass).toBe('pg-rw.shop.svc:5432:shop:app_owner:a\\:b\\\\c\\:\\\\\n');
    expect(data.pgpass.endsWith('\n')).toBe(true);
    expect(readPgpass(data.pgpass.slice(0, -1))).toEqual(['pg-rw.shop.svc', '5432', 'shop', 'app_owner', password]);
  });

  it('follows the host, port and database of the template', () => {
    const data = connectionSecretData({ ...template, host: 'pg-pooler-ro.shop.svc', port: '6432' }, 'pw');
    expect(data.host).toBe('pg-pooler-ro.shop.svc');
    expect(data.port).toBe('6432');
    expect(data.uri).toBe('postgresql://app_owner:pw@pg-pooler-ro.shop.svc:6432/shop');
    expect(data.pgpass).toBe('pg-pooler-ro.shop.svc:6432:shop:app_owner:pw\n');
  });
});
