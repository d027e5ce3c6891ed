import type { Transition } from '../../../machines/walk.ts';

/** `tick [guard] / action` — UML-style transition label used by every renderer. */
export function transitionLabel(t: Transition): string {
  const guard = t.guard ? ` [${t.guard.label}]` : '';
  const actions = t.actions.length ? ` / ${t.actions.join(', ')}` : '';
  return `${t.event}${guard}${actions}`;
}
