/** Reads one top-level scalar (`example_input`) of a definition without a YAML library. Pure. */

function unescapeDouble(body: string): string {
  return body.replace(/\\(["\\\/bfnrt]|u[0-9a-fA-F]{4})/g, (_, c: string) => {
    const map: Record<string, string> = { b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', '"': '"', '\\': '\\', '/': '/' };
    return c.length === 5 ? String.fromCharCode(parseInt(c.slice(1), 16)) : map[c];
  });
}

export function topLevelScalar(text: string, key: string): string | undefined {
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const m = new RegExp(`^${key}:(?:\\s+(.*))?$`).exec(lines[i]);
    if (!m) continue;
    const rest = (m[1] ?? '').trim();
    if (rest.startsWith('"')) {
      const q = /^"((?:[^"\\]|\\.)*)"/.exec(rest);
      return q ? unescapeDouble(q[1]) : undefined;
    }
    if (rest.startsWith("'")) {
      const q = /^'((?:[^']|'')*)'/.exec(rest);
      return q ? q[1].replace(/''/g, "'") : undefined;
    }
    if (/^[|>][-+]?\s*(#.*)?$/.test(rest)) {
      // A block scalar: the following more-indented lines.
      const block: string[] = [];
      let indent: number | undefined;
      for (let j = i + 1; j < lines.length; j++) {
        const line = lines[j];
        if (!line.trim()) { block.push(''); continue; }
        const lead = line.length - line.trimStart().length;
        if (lead === 0) break;
        indent ??= lead;
        if (lead < indent) break;
        block.push(line.slice(indent));
      }
      while (block.length && !block[block.length - 1]) block.pop();
      return rest.startsWith('>') ? block.join(' ').replace(/ {2,}/g, ' ') : block.join('\n');
    }
    const plain = rest.replace(/\s+#.*$/, '').trim();
    return plain || undefined;
  }
  return undefined;
}

export function exampleInputFromYaml(text: string): string | undefined {
  return topLevelScalar(text, 'example_input');
}
