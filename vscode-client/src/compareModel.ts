/** "Compare with previous run" as plain data (compare.ts shows it): pure, so it is unit-tested. */
import type * as wire from './wire';

export type RunRequests = wire.RunRequests;
/** `oscova.compareRuns`'s answer. */
export type Comparison = wire.Comparison;

/** The two documents' paths and the diff editor's title. Pure: unit-tested. */
export function comparisonView(c: Comparison): { left: string; right: string; title: string } {
  const safe = (s: string) => s.replace(/[^A-Za-z0-9_.-]/g, '_');
  return {
    left: `/${safe(c.agentId)}/${safe(c.previous.runId)}/requests.md`,
    right: `/${safe(c.agentId)}/${safe(c.current.runId)}/requests.md`,
    title: `${c.agentId}: model requests of run ${c.previous.runId} ↔ ${c.current.runId}`,
  };
}

/** Whether an answer of `oscova.compareRuns` has both sides. */
export function isComparison(value: unknown): value is Comparison {
  const side = (s: unknown) => !!s && typeof s === 'object' && typeof (s as RunRequests).requests === 'string' && typeof (s as RunRequests).runId === 'string';
  return !!value && typeof value === 'object' && typeof (value as Comparison).agentId === 'string'
    && side((value as Comparison).previous) && side((value as Comparison).current);
}
