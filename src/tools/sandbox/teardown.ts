/**
 * What has been started, to be stopped in reverse order: the operator before the simulator, both before
 * the control plane they talk to, temp files last. Each step runs once, and a failing step does not keep
 * the later ones from running.
 */
import { rmSync } from 'node:fs';
import { registerExitCleanup } from '../control-plane/processes.ts';

interface Step {
  name: string;
  run: () => Promise<void> | void;
}

export class Teardown {
  private readonly steps: Step[] = [];

  /** `name` says what is done once `run` resolved (reported); empty for steps not worth a line. */
  add(name: string, run: () => Promise<void> | void): void {
    this.steps.push({ name, run });
  }

  /** A directory removed at teardown, and also if the process ends without one (an uncaught error). */
  addDirectory(dir: string): void {
    const unregister = registerExitCleanup(() => rmSync(dir, { recursive: true, force: true }), { onSignals: false });
    this.add(`removed ${dir}`, () => {
      rmSync(dir, { recursive: true, force: true });
      unregister();
    });
  }

  /** Runs every step, newest first; reports each as it completes. Returns the names of the failed ones. */
  async run(report: (done: string) => void, fail: (what: string, error: unknown) => void): Promise<string[]> {
    const failed: string[] = [];
    for (let step = this.steps.pop(); step; step = this.steps.pop()) {
      try {
        await step.run();
        if (step.name) report(step.name);
      } catch (error) {
        failed.push(step.name);
        fail(step.name, error);
      }
    }
    return failed;
  }
}
