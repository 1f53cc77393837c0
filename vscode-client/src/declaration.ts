/** True when `text` (a `pyproject.toml`) declares the `[tool.oscova]` table or one of its sub-tables. */
export function declaresOscova(text: string): boolean {
  return /^\s*\[\s*tool\s*\.\s*oscova\s*[\].]/m.test(text);
}
