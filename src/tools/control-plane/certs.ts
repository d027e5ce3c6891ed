/**
 * Throw-away PKI for one control plane, made with the openssl CLI (Node can make keys but not X.509
 * certificates). One CA signs both the API server's serving certificate and the admin client certificate, so
 * a single file serves as `--client-ca-file` and as the kubeconfig's certificate authority.
 *
 * EC P-256 keeps generation fast on 2 cores; the service-account signing key is RSA because that is what
 * kube-apiserver's JWT signer expects by default (RS256).
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

export interface Pki {
  dir: string;
  caCert: string;
  serverCert: string;
  serverKey: string;
  /** Client certificate for CN=admin, O=system:masters (RBAC's built-in superuser group). */
  adminCert: string;
  adminKey: string;
  /** Service-account token signing key pair. */
  serviceAccountKey: string;
  serviceAccountPublicKey: string;
}

/** Certificates only need to outlive one test run or one `control-plane start` session. */
const DAYS = '7';

async function openssl(dir: string, args: string[]): Promise<void> {
  try {
    await execFileAsync('openssl', args, { cwd: dir, timeout: 60_000 });
  } catch (error) {
    const e = error as NodeJS.ErrnoException & { stderr?: string };
    if (e.code === 'ENOENT') throw new Error('the `openssl` command is required to create the test PKI');
    throw new Error(`openssl ${args.join(' ')} failed: ${e.stderr ?? e.message}`);
  }
}

/** A self-signed CA, `ca.crt` / `ca.key` in `dir` (made, mode 0700, if missing), for {@link issueCertificate}. */
export async function createCa(dir: string, commonName: string, days: string): Promise<void> {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  await openssl(dir, [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-days',
    days,
    '-subj',
    `/CN=${commonName}`,
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
  ]);
}

/**
 * Issues `<name>.crt` / `<name>.key` in `dir`, signed by the CA there (`ca.crt` / `ca.key`), with an OpenSSL
 * extensions text (subjectAltName, extendedKeyUsage, ...). The node harness issues its kubelet and client
 * certificates with it.
 */
export async function issueCertificate(dir: string, name: string, subject: string, extensions: string): Promise<void> {
  await openssl(dir, [
    'req',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-subj',
    subject,
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.csr`,
  ]);
  writeFileSync(join(dir, `${name}.ext`), extensions);
  await openssl(dir, [
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    // Random serials rather than -CAcreateserial: the parallel signings would race on one ca.srl file.
    '-set_serial',
    `0x${randomBytes(8).toString('hex')}`,
    '-days',
    DAYS,
    '-extfile',
    `${name}.ext`,
    '-out',
    `${name}.crt`,
  ]);
}

/**
 * A serving certificate for 127.0.0.1 signed by the control plane's CA, for a webhook server the API server
 * calls (CloudNativePG's): the CA doubles as the webhook configurations' `caBundle`. Written into `outDir`
 * under the given file names (CNPG expects `apiserver.crt`/`apiserver.key` in its WEBHOOK_CERT_DIR).
 */
export async function issueServingCertificate(
  pki: Pki,
  outDir: string,
  files: { cert: string; key: string },
  commonName: string,
): Promise<{ cert: string; key: string }> {
  mkdirSync(outDir, { recursive: true, mode: 0o700 });
  const name = `serving-${randomBytes(4).toString('hex')}`;
  await issueCertificate(
    pki.dir,
    name,
    `/CN=${commonName}`,
    'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature\n',
  );
  const cert = join(outDir, files.cert);
  const key = join(outDir, files.key);
  renameSync(join(pki.dir, `${name}.crt`), cert);
  renameSync(join(pki.dir, `${name}.key`), key);
  return { cert, key };
}

/**
 * `extraServerNames`: more subjectAltNames for the API server's certificate (`IP:10.96.0.1`,
 * `DNS:kubernetes.default.svc`, ...), for a control plane that Pods reach by its Service.
 */
export async function createPki(dir: string, extraServerNames: readonly string[] = []): Promise<Pki> {
  await createCa(dir, 'pgfsm-test-ca', DAYS);
  // The three remaining keys are independent of each other, so make them in parallel.
  await Promise.all([
    issueCertificate(
      dir,
      'apiserver',
      '/CN=kube-apiserver',
      `subjectAltName=${['IP:127.0.0.1', 'DNS:localhost', ...extraServerNames].join(',')}\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature\n`,
    ),
    issueCertificate(
      dir,
      'admin',
      '/O=system:masters/CN=admin',
      'extendedKeyUsage=clientAuth\nkeyUsage=digitalSignature\n',
    ),
    (async () => {
      await openssl(dir, ['genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', 'sa.key']);
      await openssl(dir, ['pkey', '-in', 'sa.key', '-pubout', '-out', 'sa.pub']);
    })(),
  ]);
  return {
    dir,
    caCert: join(dir, 'ca.crt'),
    serverCert: join(dir, 'apiserver.crt'),
    serverKey: join(dir, 'apiserver.key'),
    adminCert: join(dir, 'admin.crt'),
    adminKey: join(dir, 'admin.key'),
    serviceAccountKey: join(dir, 'sa.key'),
    serviceAccountPublicKey: join(dir, 'sa.pub'),
  };
}
