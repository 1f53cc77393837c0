/** Errors as words. Pure (no VS Code). */

/** A failure the user can act on: shown as it is, not logged as a fault. */
export class UserError extends Error {}

/** The message of anything thrown or answered as an error (`Error`, `{message}`, anything else). */
export function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (error && typeof error === 'object' && typeof (error as { message?: unknown }).message === 'string') return (error as { message: string }).message;
  return String(error);
}
