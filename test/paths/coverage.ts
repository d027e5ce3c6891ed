/**
 * State and transition coverage of the generated paths, measured exactly: each step is replayed on an
 * actor whose inspector reports the transitions every microstep took (eventless ones included).
 */
import { type AnyStateMachine, createActor, type EventObject, type Snapshot, type TransitionDefinition } from 'xstate';
import { getStateNodes } from 'xstate/graph';

type AnyTransition = TransitionDefinition<never, EventObject>;

export class Coverage {
  private readonly allStates: Set<string>;
  private readonly allTransitions = new Map<unknown, string>();
  readonly states = new Set<string>();
  readonly transitions = new Set<string>();

  constructor(private readonly machine: AnyStateMachine) {
    const nodes = getStateNodes(machine.root).filter((n) => n !== machine.root);
    this.allStates = new Set(nodes.map((n) => n.id));
    for (const node of [machine.root, ...nodes]) {
      const lists: Array<[string, readonly unknown[]]> = [...node.transitions.entries()];
      lists.push(['(always)', node.always ?? []]);
      for (const [event, list] of lists) {
        list.forEach((t, i) => {
          this.allTransitions.set(t, `${node.id} ${event}#${i}`);
        });
      }
    }
  }

  /** Replays one step from `from` (a snapshot of the model) and records what it took. */
  record(from: Snapshot<unknown>, event: EventObject): void {
    const actor = createActor(this.machine, {
      snapshot: this.machine.getPersistedSnapshot(from as never),
      inspect: (e) => {
        if (e.type !== '@xstate.microstep') return;
        const { _transitions: taken, snapshot } = e as unknown as {
          _transitions: AnyTransition[];
          snapshot: { value: unknown };
        };
        for (const t of taken) {
          const id = this.allTransitions.get(t);
          if (!id) throw new Error(`unknown transition from ${t.source.id}`);
          this.transitions.add(id);
        }
        this.visit(snapshot.value);
      },
    });
    actor.start();
    actor.send(event);
    this.visit((actor.getSnapshot() as { value: unknown }).value);
    actor.stop();
  }

  visit(value: unknown): void {
    const walk = (v: unknown, prefix: string) => {
      if (typeof v === 'string') {
        this.states.add(`${prefix}.${v}`);
        return;
      }
      for (const [k, child] of Object.entries(v as Record<string, unknown>)) {
        this.states.add(`${prefix}.${k}`);
        walk(child, `${prefix}.${k}`);
      }
    };
    walk(value, this.machine.root.id);
  }

  missingStates = () => [...this.allStates].filter((s) => !this.states.has(s));
  missingTransitions = () => [...this.allTransitions.values()].filter((t) => !this.transitions.has(t));
  summary = () =>
    `states: ${this.allStates.size - this.missingStates().length}/${this.allStates.size}, ` +
    `transitions: ${this.allTransitions.size - this.missingTransitions().length}/${this.allTransitions.size}`;
}
