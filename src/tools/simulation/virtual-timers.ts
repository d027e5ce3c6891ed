/**
 * The driver's `Timers` on the simulation's virtual clock: a timer never fires by itself; the simulation
 * asks when the next one is due, moves the clock there and fires what is due, in time order (ties: in
 * the order they were set), so the same run always fires the same timers in the same order.
 */
import type { Timers } from '../../operator/driver/workqueue.ts';
import type { ManualClock } from '../memory/ports.ts';
import { Heap } from './heap.ts';

interface Timer {
  at: number;
  seq: number;
  fn: () => void;
  /** Cleared or fired: it stays in the heap until it comes up, and is then dropped. */
  done: boolean;
}

export class VirtualTimers implements Timers {
  private readonly heap = new Heap<Timer>((a, b) => a.at < b.at || (a.at === b.at && a.seq < b.seq));
  private set = 0;

  constructor(private readonly clock: ManualClock) {}

  now(): number {
    return this.clock.now();
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const timer: Timer = { at: this.clock.now() + Math.max(ms, 0), seq: ++this.set, fn, done: false };
    this.heap.push(timer);
    return timer;
  }

  clearTimeout(handle: unknown): void {
    if (handle) (handle as Timer).done = true;
  }

  /** When the next pending timer is due, if any. */
  nextAt(): number | undefined {
    for (;;) {
      const top = this.heap.peek();
      if (!top?.done) return top?.at;
      this.heap.pop();
    }
  }

  /** Fires every timer due by the clock's now, in order; returns how many fired. */
  fireDue(): number {
    let fired = 0;
    for (let at = this.nextAt(); at !== undefined && at <= this.clock.now(); at = this.nextAt()) {
      const timer = this.heap.pop() as Timer;
      timer.done = true;
      timer.fn();
      fired++;
    }
    return fired;
  }
}

/** A seeded PRNG (mulberry32) in [0, 1): the driver's jitter, the same on every run. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
