/**
 * N workers pulling keys from a work queue. They can be stopped and started again (a replica losing
 * and regaining leadership) without touching the queue: stopping ends each worker after the key it
 * holds, so no pass is cut off half-way.
 */
import type { WorkQueue } from './workqueue.ts';

export class WorkerPool {
  private abort: AbortController | undefined;
  /**
   * Every worker loop still running, of this term or of an earlier one still finishing its key. A set each
   * loop leaves itself, not the current term's array: a pool started again while an earlier stop still
   * waits (leadership lost and regained within one pass) would otherwise have its new loops forgotten when
   * that stop ends, and a later stop (the graceful shutdown) would not wait for their passes.
   */
  private readonly loops = new Set<Promise<void>>();

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
    for (let i = 0; i < this.count; i++) {
      const loop: Promise<void> = this.loop(abort.signal).finally(() => this.loops.delete(loop));
      this.loops.add(loop);
    }
  }

  /**
   * Stops taking keys; resolves when every worker running now, of this term or an earlier one, finished
   * the key it was holding. Workers of a term started after this call are not waited for: they are that
   * term's stop's to wait for.
   */
  async stop(): Promise<void> {
    this.abort?.abort();
    this.abort = undefined;
    await Promise.all([...this.loops]);
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
