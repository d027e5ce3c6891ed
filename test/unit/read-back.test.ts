/** How a write whose answer was lost is judged from the object read back (core/execute.ts `holds`). */
import { describe, expect, it } from 'vitest';
import { holds } from '../../src/operator/core/execute.ts';

const sent = {
  metadata: { name: 'orders', labels: { app: 'pgfsm' }, ownerReferences: [{ uid: 'u1', controller: true }] },
  spec: { instances: 2, storage: { size: '1Gi' }, managed: { roles: [{ name: 'app', ensure: 'present' }] } },
};

describe('holds', () => {
  it('accepts what others added: defaults, status, metadata the server sets', () => {
    const read = {
      metadata: { ...sent.metadata, resourceVersion: '7', uid: 'c1' },
      spec: { ...sent.spec, managed: { roles: [{ name: 'app', ensure: 'present', inherit: true }] }, logLevel: 'info' },
      status: { phase: 'Cluster in healthy state' },
    };
    expect(holds(read, sent)).toBe(true);
  });

  it('refuses an object that lacks a field sent, or holds another value', () => {
    expect(holds({ ...sent, spec: { ...sent.spec, instances: 1 } }, sent)).toBe(false);
    expect(holds({ ...sent, spec: { instances: 2, storage: { size: '1Gi' } } }, sent)).toBe(false);
    expect(holds({ ...sent, metadata: { ...sent.metadata, ownerReferences: [] } }, sent)).toBe(false);
    expect(holds(undefined, sent)).toBe(false);
  });

  it('refuses a list of another length or order', () => {
    const two = { roles: [{ name: 'a' }, { name: 'b' }] };
    expect(holds({ roles: [{ name: 'a' }] }, two)).toBe(false);
    expect(holds({ roles: [{ name: 'b' }, { name: 'a' }] }, two)).toBe(false);
    expect(holds({ roles: [{ name: 'a' }, { name: 'b' }] }, two)).toBe(true);
  });
});
