/**
 * The image cache's entries: built once per key (also when two callers ask at once), published whole, older
 * keys of the same image dropped, failed builds leaving nothing behind.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ImageCache } from '../../../src/tools/node/images/cache.ts';

const scratch = mkdtempSync(join(tmpdir(), 'pgfsm-image-cache-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const fakeBuild =
  (counter: { builds: number }, delayMs = 0) =>
  async ({ out }: { work: string; out: string }) => {
    counter.builds++;
    await new Promise((resolve) => setTimeout(resolve, delayMs));
    writeFileSync(join(out, 'image.tar'), 'tar');
    writeFileSync(join(out, 'image.json'), JSON.stringify({ ref: 'localhost/x:1', id: 'sha256:00', key: 'k' }));
  };

describe('ImageCache.ensure', () => {
  it('builds a key once; later callers get the entry without building', async () => {
    const cache = new ImageCache(join(scratch, 'once'));
    const counter = { builds: 0 };
    const first = await cache.ensure('x', 'k1', () => {}, fakeBuild(counter));
    const second = await cache.ensure('x', 'k1', () => {}, fakeBuild(counter));
    expect([first.built, second.built, counter.builds]).toEqual([true, false, 1]);
    expect(second.entry.tar).toBe(join(scratch, 'once', 'x', 'k1', 'image.tar'));
    expect(readdirSync(join(scratch, 'once', 'tmp'))).toEqual([]);
  });

  it('builds once when two callers ask for the same key at the same time', async () => {
    const cache = new ImageCache(join(scratch, 'concurrent'));
    const counter = { builds: 0 };
    const results = await Promise.all([
      cache.ensure('x', 'k1', () => {}, fakeBuild(counter, 200)),
      cache.ensure('x', 'k1', () => {}, fakeBuild(counter, 200)),
    ]);
    expect(counter.builds).toBe(1);
    expect(results.map((r) => r.built).sort()).toEqual([false, true]);
  });

  it('keeps only the newest key of an image', async () => {
    const cache = new ImageCache(join(scratch, 'newest'));
    const counter = { builds: 0 };
    await cache.ensure('x', 'k1', () => {}, fakeBuild(counter));
    await cache.ensure('y', 'k1', () => {}, fakeBuild(counter));
    await cache.ensure('x', 'k2', () => {}, fakeBuild(counter));
    expect(readdirSync(join(scratch, 'newest', 'x'))).toEqual(['k2']);
    expect(readdirSync(join(scratch, 'newest', 'y'))).toEqual(['k1']);
  });

  it('publishes nothing when the build fails, and cleans its work directory', async () => {
    const cache = new ImageCache(join(scratch, 'failing'));
    const failing = cache.ensure(
      'x',
      'k1',
      () => {},
      async ({ out }) => {
        writeFileSync(join(out, 'image.tar'), 'half');
        throw new Error('mmdebstrap failed');
      },
    );
    await expect(failing).rejects.toThrow('mmdebstrap failed');
    expect(existsSync(join(scratch, 'failing', 'x', 'k1'))).toBe(false);
    expect(readdirSync(join(scratch, 'failing', 'tmp'))).toEqual([]);
  });

  it("removes an earlier build's work directory whose process is gone", async () => {
    const cache = new ImageCache(join(scratch, 'abandoned'));
    const stale = join(scratch, 'abandoned', 'tmp', 'x-0123abcd-999999999');
    mkdirSync(join(stale, 'rootfs'), { recursive: true });
    await cache.ensure('x', 'k1', () => {}, fakeBuild({ builds: 0 }));
    expect(existsSync(stale)).toBe(false);
  });
});
