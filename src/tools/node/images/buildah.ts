/**
 * buildah with a private store under the image cache (`<cacheDir>/buildah/`), for building pgfsm's Dockerfile:
 * its storage driver and RUN isolation are probed once and remembered, local docker-archives are loaded by
 * image ID, and RUN steps get the machine's CA bundle.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Log } from '../../control-plane/log.ts';
import { CommandError, run } from './process.ts';

/** buildah with a private store under the cache; the driver (overlay, else vfs) is chosen once and kept. */
export class Buildah {
  private readonly root: string;
  private readonly policy: string;
  driver = '';
  isolation = '';

  constructor(
    cacheDir: string,
    private readonly logFile: string,
  ) {
    this.root = join(cacheDir, 'buildah');
    this.policy = join(this.root, 'policy.json');
    mkdirSync(this.root, { recursive: true });
    // Only local archives are ever read: accept them without signatures, whatever the machine's policy says.
    writeFileSync(this.policy, JSON.stringify({ default: [{ type: 'insecureAcceptAnything' }] }));
  }

  private global(): string[] {
    return [
      '--root',
      join(this.root, `store-${this.driver}`),
      '--runroot',
      join(this.root, `run-${this.driver}`),
      '--storage-driver',
      this.driver,
    ];
  }

  run(args: string[], options: { onLine?: (line: string) => void } = {}) {
    return run('buildah', [...this.global(), ...args], { logFile: this.logFile, ...options });
  }

  /**
   * Storage driver: overlay if a container can be made and mounted with it here, else vfs. Isolation for RUN
   * steps: oci (runc, namespaces, buildah's default capabilities) if a RUN works with it here, else chroot.
   * Decided on first use with the build base as the probe, and remembered in the cache.
   */
  async configure(probe: { ref: string; tar: string; id: string }, log: Log): Promise<void> {
    const remembered = join(this.root, 'settings.json');
    try {
      const settings = JSON.parse(readFileSync(remembered, 'utf8')) as { driver?: string; isolation?: string };
      if (settings.driver && settings.isolation) {
        this.driver = settings.driver;
        this.isolation = settings.isolation;
        return;
      }
    } catch {
      // first use
    }
    const container = async (): Promise<string> => {
      await this.load(probe);
      const { stdout } = await this.run(['from', '--pull=never', '--signature-policy', this.policy, probe.ref]);
      return stdout.trim().split('\n').at(-1) ?? '';
    };
    this.driver = 'overlay';
    let probing: string;
    try {
      probing = await container();
      await this.run(['mount', probing]);
    } catch (error) {
      log(`buildah: the overlay storage driver does not work here (${String(error).split('\n')[0]}); using vfs`);
      for (const dir of ['store-overlay', 'run-overlay'])
        rmSync(join(this.root, dir), { recursive: true, force: true });
      this.driver = 'vfs';
      probing = await container();
    }
    try {
      this.isolation = 'oci';
      await this.run(['run', '--isolation', 'oci', '--network', 'host', probing, '--', 'true']);
    } catch (error) {
      log(`buildah: RUN with runc (--isolation oci) fails here (${String(error).split('\n')[0]}); using chroot`);
      this.isolation = 'chroot';
    } finally {
      await this.run(['rm', probing]).catch(() => undefined);
    }
    writeFileSync(remembered, JSON.stringify({ driver: this.driver, isolation: this.isolation }));
  }

  /** The image ID a reference names in the store, if any. */
  async imageId(ref: string): Promise<string | undefined> {
    try {
      const { stdout } = await this.run(['inspect', '--type', 'image', '--format', '{{.FromImageID}}', ref]);
      return `sha256:${stdout.trim().replace(/^sha256:/, '')}`;
    } catch (error) {
      if (error instanceof CommandError) return undefined;
      throw error;
    }
  }

  /** Loads a docker-archive under `ref` unless the store already has that very image there. */
  async load(image: { ref: string; tar: string; id: string }): Promise<void> {
    if ((await this.imageId(image.ref)) === image.id) return;
    await this.run(['pull', '--signature-policy', this.policy, `docker-archive:${image.tar}`]);
    await this.run(['tag', image.id.replace(/^sha256:/, ''), image.ref]);
  }

  get signaturePolicy(): string {
    return this.policy;
  }
}

/**
 * RUN steps reach the network with the machine's own trust store: where egress goes through a TLS-inspecting
 * proxy, its CA is in the machine's bundle and not in Debian's. The bundle is bind-mounted (read-only) over the
 * build container's for RUN steps only; it never lands in a layer, and pgfsm's runtime stage copies nothing of
 * the build stage's /etc anyway.
 */
export function trustArguments(): string[] {
  const candidates = [process.env.SSL_CERT_FILE, '/etc/ssl/certs/ca-certificates.crt'];
  const bundle = candidates.find((path): path is string => !!path && existsSync(path));
  return bundle ? ['--volume', `${bundle}:/etc/ssl/certs/ca-certificates.crt:ro`] : [];
}
