/**
 * A deterministic, discrete-event run of the operator's real driver — the Controller with its mapping,
 * work queue, backoff and workers (src/operator/driver/) — and the real reconcile core, against the
 * in-memory API and the CNPG simulator, on a virtual clock. Whatever decides when a cluster is looked at
 * is the shipped code; this module only moves time: it fires the CNPG simulator's changes and the
 * driver's timers in time order and, before moving the clock on, waits until the driver has nothing left
 * to do at the present instant. A lifecycle of simulated minutes runs in milliseconds and the same inputs
 * always give the same run.
 *
 * The driver runs only while simulated time runs (`run`, `runUntil`). Between runs time stands still:
 * what a test changes is picked up by the watches and queued at once, and processed when time runs
 * again, so a probe (`reconcileNow`) never races a pass of the driver.
 */
import { pino } from 'pino';
import type { DatabasePorts } from '../../operator/core/database/ports.ts';
import type { ClusterKey, Ports } from '../../operator/core/ports.ts';
import { keyString } from '../../operator/core/ports.ts';
import type { ReconcileOutcome } from '../../operator/core/reconcile.ts';
import { defaultSettings, type Settings } from '../../operator/domain/observation.ts';
import { cacheReadingPorts } from '../../operator/driver/cache-reads.ts';
import { ClassProtection } from '../../operator/driver/class-protection.ts';
import { Controller } from '../../operator/driver/controller.ts';
import { databaseKeyString } from '../../operator/driver/database-mapping.ts';
import { type ProcessPasses, processPasses } from '../../operator/driver/passes.ts';
import { allSources, type WatchSources } from '../../operator/driver/sources.ts';
import { MemoryApiServer } from '../memory/api-server.ts';
import { ManualClock, MemoryEventSink, memoryPorts } from '../memory/ports.ts';
import { memoryWatchSources, type WatchLag } from '../memory/watch-sources.ts';
import { CnpgSimulator, defaultDelays, type SimulatorDelays } from './cnpg-simulator.ts';
import { simulatedDatabasePorts } from './database-ports.ts';
import { seededRandom, VirtualTimers } from './virtual-timers.ts';

export interface SimulationOptions {
  start?: number;
  settings?: Partial<Settings>;
  delays?: Partial<SimulatorDelays>;
  /** Called after every reconcile pass (of the driver, and of `reconcileNow`). */
  onPass?: (outcome: ReconcileOutcome, now: number) => void;
  /** Seed of the driver's jitter. */
  seed?: number;
  /**
   * Wraps each operator process's ports, e.g. with injected faults that the in-memory API cannot express
   * (a write that lands but whose response is lost).
   */
  ports?: (ports: Ports) => Ports;
  /**
   * The same for the PostgresDatabase's own ports (its CNPG Database, connection Secrets and grants); the ports it
   * shares with the clusters' are the ones `ports` wrapped.
   */
  databasePorts?: (ports: DatabasePorts) => DatabasePorts;
  /**
   * How much of its logs the run keeps — the passes, the in-memory API's writes, the events sent: `'full'` keeps
   * every entry, for tests that read them (`simulationWith` asks for that); a number keeps at least the latest
   * so many of each (the counts of all stay in `passCount`, `api.writeCount` and `eventCount`). By default the
   * latest 1,000: a long run (the sandbox, a fleet in the benchmark) then holds the fleet, not its history.
   */
  logs?: 'full' | number;
  /** Whether a pass follows its own writes (core/reconcile.ts, `followWrites`), as `pgfsm run`'s do: on by default. */
  followWrites?: boolean;
  /**
   * The most a watch event lags behind the write it reports, in ms of virtual time: each change reaches the
   * operator's caches a seeded random 0..watchLagMs later, in order per kind (memory/watch-sources.ts,
   * WatchLag). 0, the default: at once, as the in-memory API always did.
   */
  watchLagMs?: number;
}

const DEFAULT_LOG_ENTRIES = 1_000;

/**
 * Drops the oldest entries of a log once it holds twice `keep` (so the cost stays amortised O(1) per entry),
 * keeping the latest `keep`.
 */
function trim(log: unknown[], keep: number): void {
  if (log.length > 2 * keep) log.splice(0, log.length - keep);
}

/**
 * `pgfsm run`'s default. Two workers interleave the passes of two clusters at their awaits, as in
 * production; the run stays deterministic because every await of the in-memory ports resolves in the
 * microtask queue, in an order fixed by the program alone (no I/O, no real timers).
 */
const WORKERS = 2;

/** More passes than this for one key within `HOT_LOOP_WINDOW_MS` of virtual time: a hot loop. */
const HOT_LOOP_PASSES = 50;
const HOT_LOOP_WINDOW_MS = 100;

/** One operator process: what a restart throws away. */
interface OperatorProcess {
  readonly sources: WatchSources;
  readonly ports: Ports;
  /** The passes, with what they leave to announce and the Events still being sent: lost on restart. */
  readonly passes: ProcessPasses;
  readonly controller: Controller;
  /** Restarted: a pass it had taken but not begun never runs. */
  killed: boolean;
}

export class Simulation {
  readonly clock: ManualClock;
  readonly api: MemoryApiServer;
  readonly events: MemoryEventSink;
  readonly cnpg: CnpgSimulator;
  readonly settings: Settings;
  /** The passes, oldest first: every one with `logs: 'full'`, else the latest (see `SimulationOptions.logs`). */
  readonly passes: ReconcileOutcome[] = [];
  /** How many passes ran (the driver's and `reconcileNow`'s), whatever `passes` still holds. */
  passCount = 0;
  /** The PostgresDatabases' passes, oldest first, kept as `passes` is (their keys would mix with the clusters'). */
  readonly databasePasses: ReconcileOutcome[] = [];
  /** How many database passes ran, whatever `databasePasses` still holds. */
  databasePassCount = 0;
  private readonly keepLogs: number;
  private readonly timers: VirtualTimers;
  private readonly random: () => number;
  private readonly onPass: SimulationOptions['onPass'];
  private readonly wrapPorts: (ports: Ports) => Ports;
  private readonly wrapDatabasePorts: (ports: DatabasePorts) => DatabasePorts;
  private readonly followWrites: boolean | undefined;
  private readonly watchLag: WatchLag | undefined;
  private operator: OperatorProcess;
  /** Shut-down processes still finishing (a restart drains the old process like SIGTERM does). */
  private stopping: Promise<void>[] = [];
  /** Closed between runs: the driver's passes wait here while time stands still. */
  private gate: { opened: Promise<void>; open: () => void } | undefined;
  private readonly recent = new Map<string, { since: number; passes: number }>();
  private failure: Error | undefined;
  private driverPasses = 0;

  constructor(options: SimulationOptions = {}) {
    this.clock = new ManualClock(options.start ?? Date.parse('2026-11-30T12:00:00Z'));
    this.api = new MemoryApiServer(() => this.clock.now());
    this.events = new MemoryEventSink(this.clock);
    this.settings = { ...defaultSettings, ...options.settings };
    this.cnpg = new CnpgSimulator(this.api, this.clock, { ...defaultDelays, ...options.delays });
    this.timers = new VirtualTimers(this.clock);
    this.random = seededRandom(options.seed ?? 20261130);
    this.onPass = options.onPass;
    this.wrapPorts = options.ports ?? ((ports) => ports);
    this.wrapDatabasePorts = options.databasePorts ?? ((ports) => ports);
    this.followWrites = options.followWrites;
    const lagRandom = seededRandom((options.seed ?? 20261130) + 1);
    const maxLag = options.watchLagMs ?? 0;
    this.watchLag = maxLag > 0 ? { timers: this.timers, delayMs: () => lagRandom() * maxLag } : undefined;
    this.keepLogs = options.logs === 'full' ? Number.POSITIVE_INFINITY : (options.logs ?? DEFAULT_LOG_ENTRIES);
    this.closeGate();
    this.operator = this.startProcess();
  }

  /** The ports of the running operator process. */
  get ports(): Ports {
    return this.operator.ports;
  }

  get controller(): Controller {
    return this.operator.controller;
  }

  /** Queues a pass for the key, as a watch event would. */
  enqueue(key: ClusterKey): void {
    this.operator.controller.queue.add(keyString(key));
  }

  /**
   * A pass for the key now, outside the queue: a probe for tests. It schedules nothing (the outcome's
   * requeue decision is only returned); what it writes wakes the driver through the watches as usual.
   */
  async reconcileNow(key: ClusterKey): Promise<ReconcileOutcome> {
    const { passes } = this.operator;
    const outcome = await passes.pass(key);
    // A probe returns with its Events sent, as they are at the next settled instant of a run.
    await passes.delivery.idle();
    this.record(outcome);
    return outcome;
  }

  /**
   * The operator process restarts: its caches, work queue, backoff counters and ports are gone, the
   * stored objects stay. The old controller shuts down (a pass it is running finishes; nothing it had
   * queued runs), and a new one relists and enqueues every cluster, as a new process would.
   */
  restartOperator(): void {
    const old = this.operator;
    old.killed = true;
    for (const source of allSources(old.sources)) void source.stop();
    this.stopping.push(old.controller.shutDown());
    this.operator = this.startProcess();
  }

  /** Runs every simulator change, timer and pass due up to `until` (virtual ms), in time order. */
  async runUntil(until: number): Promise<void> {
    this.openGate();
    try {
      for (;;) {
        await this.settleInstant();
        const next = Math.min(
          this.timers.nextAt() ?? Number.POSITIVE_INFINITY,
          this.cnpg.nextEventAt() ?? Number.POSITIVE_INFINITY,
        );
        if (next > until) break;
        if (next > this.clock.now()) this.clock.set(next);
      }
      if (this.clock.now() < until) this.clock.set(until);
      await this.settleInstant();
    } finally {
      this.closeGate();
      this.forgetQuietKeys();
    }
  }

  /** Runs for `ms` of virtual time from now. */
  run(ms: number): Promise<void> {
    return this.runUntil(this.clock.now() + ms);
  }

  private startProcess(): OperatorProcess {
    const sources = memoryWatchSources(this.api, this.clock, this.watchLag);
    // As startOperator does: a pass reads its world from this process's caches, and writes to the API; a
    // database's pass shares the clusters' ports, and its writes are known to their reads at once.
    const clusterPorts = this.wrapPorts(memoryPorts(this.api, this.clock, this.events));
    const { ports, databasePorts } = cacheReadingPorts(
      clusterPorts,
      sources,
      this.wrapDatabasePorts(simulatedDatabasePorts(this.api, clusterPorts)),
    );
    const passes = processPasses(ports, this.settings, {
      ...(databasePorts ? { databasePorts } : {}),
      ...(this.followWrites !== undefined ? { followWrites: this.followWrites } : {}),
      onDelivered: ({ sent, unsent }) => {
        this.eventsSent += sent.length;
        this.eventsUnsent += unsent.length;
      },
    });
    const classes = new ClassProtection({ sources, ports, settings: this.settings });
    const operator: OperatorProcess = {
      sources,
      ports,
      passes,
      killed: false,
      controller: new Controller({
        sources,
        reconcile: (key) => this.pass(operator, key),
        workers: WORKERS,
        logger: pino({ level: 'silent' }),
        timers: this.timers,
        random: this.random,
        pendingKeys: () => passes.unsentKeys(),
        reconcileDatabase: (key) => this.databasePass(operator, key),
        reconcileClass: async (name) => {
          await this.gate?.opened;
          return classes.pass(name);
        },
      }),
    };
    // As startOperator does: watch, then list (the initial list enqueues every cluster), then lead.
    passes.attach(operator.controller);
    operator.controller.watch();
    for (const source of allSources(sources)) source.start();
    operator.controller.startWorkers();
    return operator;
  }

  /** The reconcile function the driver calls: the real core, recorded and watched for hot loops. */
  private async pass(operator: OperatorProcess, key: ClusterKey): Promise<ReconcileOutcome> {
    await this.gate?.opened;
    if (operator.killed) throw new Error('the operator process was restarted before this pass began');
    this.countPass(keyString(key));
    this.driverPasses++;
    const outcome = await operator.passes.pass(key);
    this.record(outcome);
    return outcome;
  }

  /** A PostgresDatabase's pass, as `pgfsm run` runs it (passes.ts), recorded and watched for hot loops too. */
  private async databasePass(operator: OperatorProcess, key: ClusterKey): Promise<ReconcileOutcome> {
    await this.gate?.opened;
    if (operator.killed) throw new Error('the operator process was restarted before this pass began');
    const { databasePass } = operator.passes;
    if (!databasePass) throw new Error('the simulated process has no database ports');
    this.countPass(databaseKeyString(key));
    this.driverPasses++;
    const outcome = await databasePass(key);
    this.databasePassCount++;
    // A database's Events are sent within its pass, through the outbox (driver/passes.ts): the outcome names them.
    this.eventsSent += outcome.events.length;
    this.databasePasses.push(outcome);
    if (this.keepLogs !== Number.POSITIVE_INFINITY) trim(this.databasePasses, this.keepLogs);
    return outcome;
  }

  /** How many events were sent, whatever `events.events` still holds. */
  get eventCount(): number {
    return this.eventsSent;
  }

  private eventsSent = 0;

  /** How many times an Event handed over by a pass could not be sent (each is left to the object's next pass). */
  get unsentCount(): number {
    return this.eventsUnsent;
  }

  private eventsUnsent = 0;

  private record(outcome: ReconcileOutcome): void {
    this.passCount++;
    // Handed-over Events are counted as the delivery sends them (startProcess).
    if (!outcome.handedOver) this.eventsSent += outcome.events.length;
    this.passes.push(outcome);
    if (this.keepLogs !== Number.POSITIVE_INFINITY) {
      trim(this.passes, this.keepLogs);
      trim(this.events.events, this.keepLogs);
      trim(this.api.writes, this.keepLogs);
    }
    this.onPass?.(outcome, this.clock.now());
  }

  /**
   * A key whose hot-loop window has passed starts a new window at its next pass anyway: its entry can go, instead
   * of one entry per cluster for the whole run.
   */
  private forgetQuietKeys(): void {
    const now = this.clock.now();
    for (const [id, window] of this.recent) if (now - window.since > HOT_LOOP_WINDOW_MS) this.recent.delete(id);
  }

  private countPass(id: string): void {
    const now = this.clock.now();
    const recent = this.recent.get(id);
    const window = recent && now - recent.since <= HOT_LOOP_WINDOW_MS ? recent : { since: now, passes: 0 };
    window.passes++;
    this.recent.set(id, window);
    if (window.passes > HOT_LOOP_PASSES) {
      this.failure ??= new Error(
        `hot loop: more than ${HOT_LOOP_PASSES} passes for ${id} within ${HOT_LOOP_WINDOW_MS} ms of virtual time`,
      );
      throw this.failure;
    }
  }

  /**
   * Everything due at the present instant: the simulator's changes, the driver's timers, and the passes
   * they cause, over again until a round runs no pass (CNPG reacts to what a pass wrote at once, as the
   * passes react to CNPG's changes).
   */
  private async settleInstant(): Promise<void> {
    for (;;) {
      const before = this.driverPasses;
      this.cnpg.advance();
      this.timers.fireDue();
      await this.quiesce();
      if (this.driverPasses === before) return;
    }
  }

  /** Waits until the driver has nothing left to do at this instant; fails the run on a hot loop. */
  private async quiesce(): Promise<void> {
    do {
      await this.operator.controller.queue.whenIdle();
      // The Events the passes handed over, sent after them: a failed one wakes its key again.
      await this.operator.passes.delivery.idle();
      await Promise.all(this.stopping.splice(0));
    } while (!this.operator.controller.queue.idle || this.operator.passes.delivery.busy > 0);
    if (this.failure) throw this.failure;
  }

  private openGate(): void {
    this.gate?.open();
    this.gate = undefined;
  }

  private closeGate(): void {
    if (this.gate) return;
    let open = () => {};
    const opened = new Promise<void>((resolve) => {
      open = resolve;
    });
    this.gate = { opened, open };
  }
}
