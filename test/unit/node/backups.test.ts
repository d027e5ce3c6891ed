/**
 * The pure parts of the node's backup tooling (issue 36): the version a Go binary's build information names, the
 * plugin image's recipe, and the plugin's Service and Deployment as CloudNativePG must find them. That they work is
 * test/e2e/compat/backups-by-hand.test.ts's job.
 */
import { describe, expect, it } from 'vitest';
import {
  BARMAN_CLOUD_MODULE,
  BARMAN_CLOUD_VERSION,
  parseModuleVersion,
} from '../../../src/tools/control-plane/build.ts';
import {
  CLIENT_SECRET,
  PLUGIN_NAME,
  PLUGIN_PORT,
  PLUGIN_SERVER_NAMES,
  pluginWorkload,
  SERVER_SECRET,
} from '../../../src/tools/node/barman-cloud.ts';
import {
  BARMAN_CLOUD_COMMANDS,
  BARMAN_CLOUD_REF,
  barmanCloudRecipe,
} from '../../../src/tools/node/images/barman-cloud.ts';
import { debianImageKey } from '../../../src/tools/node/images/build.ts';

describe('parseModuleVersion', () => {
  // What the Go linker embeds (and `go version -m` prints), surrounded by other bytes of the binary.
  const info = [
    '\u0000\u0007garbage',
    'path\tgithub.com/cloudnative-pg/plugin-barman-cloud/cmd/manager',
    'mod\tpgfsm.local/control-plane/barman-cloud\t(devel)\t',
    'dep\tgithub.com/cloudnative-pg/plugin-barman-cloud-extra\tv9.9.9\th1:x=',
    'dep\tgithub.com/cloudnative-pg/plugin-barman-cloud\tv0.15.0\th1:abc=',
    'dep\tgithub.com/versity/versitygw\tv1.8.0\th1:def=',
    'build\tCGO_ENABLED=0',
  ].join('\n');

  it('names the version of exactly the module asked for', () => {
    expect(parseModuleVersion(info, BARMAN_CLOUD_MODULE)).toBe('v0.15.0');
    expect(parseModuleVersion(info, 'github.com/versity/versitygw')).toBe('v1.8.0');
  });

  it('says nothing for a module the binary was not built with, or a main module in development', () => {
    expect(parseModuleVersion(info, 'github.com/cloudnative-pg/cloudnative-pg')).toBeUndefined();
    expect(parseModuleVersion(info, 'pgfsm.local/control-plane/barman-cloud')).toBeUndefined();
  });
});

describe("the Barman Cloud Plugin's image", () => {
  const recipe = barmanCloudRecipe('/cache/barman-cloud-plugin-v0.15.0/barman-cloud-plugin', 'a'.repeat(64));

  it('is one trixie image with barman-cloud and the plugin binary as its entrypoint', () => {
    expect(recipe.ref).toBe(BARMAN_CLOUD_REF);
    expect(recipe.ref).toContain(BARMAN_CLOUD_VERSION);
    expect(recipe.suite).toBe('trixie');
    expect(recipe.include).toEqual(['barman-cli-cloud', 'ca-certificates']);
    expect(recipe.config.entrypoint).toEqual(['/manager']);
    for (const command of BARMAN_CLOUD_COMMANDS) expect(recipe.expect).toContain(`usr/bin/${command}`);
    expect(recipe.expect).toContain('manager');
  });

  it("changes its cache key with the binary's content, not only its path", () => {
    const packages = new Map([['barman-cli-cloud', '3.13.3-1']]);
    const other = barmanCloudRecipe('/cache/barman-cloud-plugin-v0.15.0/barman-cloud-plugin', 'b'.repeat(64));
    expect(debianImageKey(recipe, packages)).not.toBe(debianImageKey(other, packages));
    expect(recipe.customize.join('\n')).toContain('sha256sum --check');
  });
});

describe("the plugin's Deployment and Service", () => {
  const image = 'localhost/pgfsm/plugin-barman-cloud:v0.15.0';
  const { deployment, service } = pluginWorkload(image);

  it('carries the label and annotations CloudNativePG discovers plugins by', () => {
    expect(service.metadata.labels['cnpg.io/pluginName']).toBe(PLUGIN_NAME);
    expect(service.metadata.annotations).toEqual({
      'cnpg.io/pluginClientSecret': CLIENT_SECRET,
      'cnpg.io/pluginServerSecret': SERVER_SECRET,
      'cnpg.io/pluginPort': String(PLUGIN_PORT),
    });
    expect(service.metadata.namespace).toBe('cnpg-system');
    expect(service.spec.selector).toEqual(deployment.spec.selector.matchLabels);
  });

  it('runs the one image as the operator part and names it as the sidecar, never pulled', () => {
    const [container] = deployment.spec.template.spec.containers;
    expect(container?.image).toBe(image);
    expect(container?.imagePullPolicy).toBe('Never');
    expect(container?.args[0]).toBe('operator');
    expect(container?.env).toEqual([{ name: 'SIDECAR_IMAGE', value: image }]);
    expect(container?.args).toContain(`--server-address=:${PLUGIN_PORT}`);
  });

  it('has certificates for every name CloudNativePG may dial', () => {
    expect(PLUGIN_SERVER_NAMES).toEqual(['barman-cloud', 'barman-cloud.cnpg-system.svc']);
  });
});
