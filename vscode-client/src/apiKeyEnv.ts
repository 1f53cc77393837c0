/**
 * The environment variables that hold model keys: every `[models.NAME] api_key_env` of a host
 * configuration (`oscova.toml`, or `[tool.oscova.models.NAME]` in `pyproject.toml`). A small reader of
 * the TOML shapes a host file uses (tables, dotted keys, inline tables); it never throws.
 */

export interface ModelKey {
  /** The `[models.NAME]` name. */
  model: string;
  /** The environment variable, e.g. `OPENAI_API_KEY`. */
  env: string;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function stripComment(line: string): string {
  let quote: string | null = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quote) {
      if (c === '\\' && quote === '"') i++;
      else if (c === quote) quote = null;
    } else if (c === '"' || c === "'") quote = c;
    else if (c === '#') return line.slice(0, i);
  }
  return line;
}

/** Splits `a.b."c.d"` into its parts, unquoting each. */
function splitKey(key: string): string[] {
  const parts: string[] = [];
  let current = '';
  let quote: string | null = null;
  for (const c of key.trim()) {
    if (quote) {
      if (c === quote) quote = null;
      else current += c;
    } else if (c === '"' || c === "'") quote = c;
    else if (c === '.') {
      parts.push(current.trim());
      current = '';
    } else current += c;
  }
  parts.push(current.trim());
  return parts;
}

function unquote(value: string): string | undefined {
  const v = value.trim();
  const m = /^"((?:[^"\\]|\\.)*)"$/.exec(v) ?? /^'([^']*)'$/.exec(v);
  return m ? m[1] : undefined;
}

/** Top-level `key = value` pairs of an inline table `{ a = "x", b = 1 }` (no nesting needed here). */
function inlineTable(value: string): Map<string, string> {
  const out = new Map<string, string>();
  const body = value.trim().replace(/^\{/, '').replace(/\}$/, '');
  for (const pair of body.split(',')) {
    const eq = pair.indexOf('=');
    if (eq > 0) out.set(splitKey(pair.slice(0, eq)).join('.'), pair.slice(eq + 1).trim());
  }
  return out;
}

/** The model keys a host file declares, in file order, without duplicates. */
export function modelKeys(toml: string, fileName = 'oscova.toml'): ModelKey[] {
  const prefix = /(^|[\\/])pyproject\.toml$/.test(fileName) ? ['tool', 'oscova'] : [];
  const found: ModelKey[] = [];
  const add = (path: string[], value: string) => {
    // path is relative to the host root: ['models', NAME, 'api_key_env']
    if (path.length === 3 && path[0] === 'models' && path[2] === 'api_key_env') {
      const env = unquote(value);
      if (env && ENV_NAME.test(env) && !found.some((k) => k.model === path[1])) found.push({ model: path[1], env });
    } else if (path.length === 2 && path[0] === 'models' && value.trim().startsWith('{')) {
      const table = inlineTable(value);
      const env = table.get('api_key_env');
      if (env !== undefined) add([...path, 'api_key_env'], env);
    } else if (path.length === 1 && path[0] === 'models' && value.trim().startsWith('{')) {
      // models = { default = { ... } } is rare; nested inline tables are not read.
    }
  };
  let table: string[] = [];
  for (const rawLine of toml.split(/\r?\n/)) {
    const line = stripComment(rawLine).trim();
    if (!line) continue;
    const header = /^\[\[?([^\]]+)\]\]?$/.exec(line);
    if (header) {
      table = splitKey(header[1]);
      continue;
    }
    const eq = line.indexOf('=');
    if (eq <= 0) continue;
    const full = [...table, ...splitKey(line.slice(0, eq))];
    if (prefix.length && (full[0] !== prefix[0] || full[1] !== prefix[1])) continue;
    add(full.slice(prefix.length), line.slice(eq + 1));
  }
  return found;
}

/** Distinct variable names, in order, from several files' keys. */
export function distinctEnvs(keys: ModelKey[]): string[] {
  return [...new Set(keys.map((k) => k.env))];
}

/** The SecretStorage key of an environment variable's value. */
export function secretKey(env: string): string {
  return `oscova.apiKey.${env}`;
}
