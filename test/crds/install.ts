/**
 * CRD installation for the tests. The logic lives in the Kubernetes adapter (the sandbox uses it too);
 * this module keeps the names the tests have always imported.
 */
export {
  CNPG_TEST_CRDS,
  installCrds,
  PGFSM_CRDS,
  readCrds,
} from '../../src/adapters/kubernetes/manifests.ts';
