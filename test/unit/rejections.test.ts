/** Refusals at admission: how the adapter classifies them, and how a stored refusal changes a judgment. */
import { ApiException } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { assess } from '../../src/operator/domain/assessment.ts';
import { defaultSettings } from '../../src/operator/domain/observation.ts';
import { digestOf, rejectionOf, remembering } from '../../src/operator/domain/rejections.ts';
import { toPortError } from '../../src/operator/kubernetes/errors.ts';
import { healthyFacts, observe } from '../../src/tools/fixtures/observations.ts';

const api = (code: number, body: object) => new ApiException(code, 'x', JSON.stringify(body), {});
const DENIED =
  'admission webhook "vcluster.cnpg.io" denied the request: Cluster.postgresql.cnpg.io "orders" is invalid: ' +
  `spec.imageName: Invalid value: "ghcr.io/cloudnative-pg/postgresql:18": Can't change image name and ` +
  `configuration at the same time when \`primaryUpdateMethod\` is set to \`switchover\`. ${'x'.repeat(400)}`;

describe('the adapter classifies a refusal at admission as rejected, keeping what the API server said', () => {
  it.each([
    [422, 'Invalid', DENIED],
    [400, 'BadRequest', 'spec.type: Unsupported value'],
    [403, 'Forbidden', 'admission webhook "vpooler.cnpg.io" denied the request: Invalid or reserved parameter'],
  ])('HTTP %i %s', (code, reason, message) => {
    const error = toPortError(api(code, { reason, message }), { what: 'apply Cluster a/b' });
    expect(error.errorClass).toBe('rejected');
    expect(error.refusal).toBe(message);
  });

  it("RBAC's 403 is forbidden, and a Secret's refusal repeats nothing", () => {
    const rbac = api(403, { reason: 'Forbidden', message: 'clusters is forbidden: User "x" cannot patch' });
    expect(toPortError(rbac, { what: 'op' }).errorClass).toBe('forbidden');
    const secret = toPortError(api(422, { reason: 'Invalid', message: 'data: "hunter2"' }), {
      what: 'create Secret a/b',
      sensitive: true,
    });
    expect(secret.errorClass).toBe('rejected');
    expect(secret.refusal).toBeUndefined();
    expect(secret.message).toBe('create Secret a/b: HTTP 422 Invalid');
  });
});

describe('a stored refusal', () => {
  const drifted = observe({ ...healthyFacts, cnpg: 'drifted' });
  const write = assess(drifted, defaultSettings, 0).plans.cluster[0];
  if (write?.type !== 'apply') throw new Error('the drifted world must ask for an apply');

  it('fails the component with the refusal and takes the refused write out', () => {
    const refused = remembering(drifted, rejectionOf('cluster', write.object, DENIED));
    const x = assess(refused, defaultSettings, 0);
    expect(x.health.cluster).toMatchObject({ state: 'Failed', reason: 'ClusterSpecRejected' });
    expect(x.health.cluster?.message).toContain(DENIED);
    expect(x.plans.cluster).toEqual([]);
    expect(x.rejections).toHaveLength(1);
  });

  it('is forgotten once pgfsm would send another object, or nothing', () => {
    const other = rejectionOf('cluster', { ...write.object, metadata: { ...write.object.metadata, labels: {} } }, 'no');
    const x = assess(remembering(drifted, other), defaultSettings, 0);
    expect(x.health.cluster?.reason).toBe('CNPGClusterUpdating');
    expect(x.rejections).toEqual([]);
    const healthy = remembering(observe(healthyFacts), rejectionOf('cluster', write.object, DENIED));
    expect(assess(healthy, defaultSettings, 0).rejections).toEqual([]);
  });

  it('names the object by a digest that ignores key order', () => {
    expect(digestOf({ apiVersion: 'v1', kind: 'K', metadata: { name: 'a', namespace: 'n' } })).toBe(
      digestOf({ metadata: { namespace: 'n', name: 'a' }, kind: 'K', apiVersion: 'v1' }),
    );
  });
});
