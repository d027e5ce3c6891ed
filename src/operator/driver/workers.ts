/**
 * N workers pulling keys from a work queue. They can be stopped and started again (a replica losing
 * and regaining leadership) without touching the queue: stopping ends each worker after the key it
 * holds, so no pass is cut off half-way.
 */
import type { WorkQueue } from './workqueue.ts';

export class WorkerPool {
  private abort: AbortController | undefined;
  private loops: Promise<void>[] = [];

  constructor(
    private readonly queue: WorkQueue,
    readonly count: number,
    private readonly handle: (key: string) => Promise<void>,
  ) {}

  get running(): boolean {
    return this.abort !== undefined;
  }

  start(): void {
    if (this.abort) return;
    const abort = new AbortController();
    this.abort = abort;
    this.loops = Array.from({ length: this.count }, () => this.loop(abort.signal));
  }

  /** Stops taking keys; resolves when every worker finished the key it was holding. */
  async stop(): Promise<void> {
    this.abort?.abort();
    this.abort = undefined;
    await Promise.all(this.loops);
    this.loops = [];
  }

  private async loop(signal: AbortSignal): Promise<void> {
    for (;;) {
      const key = await this.queue.get(signal);
      if (key === undefined) return;
      try {
        await this.handle(key);
      } catch {
        // The handler reports its own failures; a worker must survive anything it throws.
      } finally {
        this.queue.done(key);
      }
    }
  }
}
