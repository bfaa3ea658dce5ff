/**
 * Values written into the launch files: YAML for veRL's Hydra config (with the comment above each
 * key, as veRL's own config files have them), Python literals for TRL's train.py, shell words for
 * OpenRLHF's flags. Every mapped key carries a `source` comment (the trainer file it was checked in)
 * and the lab settings it comes from.
 */
import type { Mapped, Scalar } from './mapping';

/** The comment of a mapped key: the lab settings, how it is derived, and where the key was checked. */
export function mappingComment(k: Mapped): string {
  const from = k.from.map((f) => (f.startsWith('code:') ? `lab code (${f.slice(5)})` : f)).join(', ');
  return `${from}${k.how ? `: ${k.how}` : ''}; source: ${k.source}`;
}

/**
 * A number as YAML 1.1 (PyYAML, OmegaConf) reads it back as the same number: a float in
 * exponent form needs a dot and a signed exponent (`1.0e-08`), or it reads as a string.
 */
export function yamlNumber(x: number): string {
  const s = String(x);
  if (!s.includes('e')) return s;
  const [m, e] = s.split('e') as [string, string];
  return `${m.includes('.') ? m : `${m}.0`}e${e.startsWith('-') || e.startsWith('+') ? e : `+${e}`}`;
}

function yamlScalar(v: Scalar): string {
  if (v === null) return 'null';
  if (typeof v === 'number') return yamlNumber(v);
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  return JSON.stringify(v); // a double-quoted YAML scalar
}

export function yamlValue(v: Scalar | Scalar[]): string {
  return Array.isArray(v) ? `[${v.map(yamlScalar).join(', ')}]` : yamlScalar(v);
}

/** A key as YAML 1.1 reads it back as that string: `n`, `on`, `yes` ... are quoted (PyYAML would read `on` as true; veRL's own generated config quotes 'n'). */
function yamlKey(k: string): string {
  return /^(y|n|yes|no|on|off|true|false|null|~)$/i.test(k) ? `'${k}'` : k;
}

interface YamlNode {
  children: Map<string, YamlNode>;
  leaf?: { value: Scalar | Scalar[]; comment: string };
}

/** Nested YAML of dotted keys, each leaf under its comment lines; keys keep the order given. */
export function yamlTree(entries: readonly { key: string; value: Scalar | Scalar[]; comment: string }[]): string {
  const root: YamlNode = { children: new Map() };
  for (const e of entries) {
    let node = root;
    for (const part of e.key.split('.')) {
      let next = node.children.get(part);
      if (!next) node.children.set(part, (next = { children: new Map() }));
      node = next;
    }
    if (node.leaf || node.children.size) throw new Error(`yamlTree: ${e.key} is set twice or is also a section`);
    node.leaf = { value: e.value, comment: e.comment };
  }
  const lines: string[] = [];
  const walk = (node: YamlNode, indent: string): void => {
    for (const [k, child] of node.children) {
      if (child.leaf) {
        lines.push(`${indent}# ${child.leaf.comment}`, `${indent}${yamlKey(k)}: ${yamlValue(child.leaf.value)}`);
      } else {
        lines.push(`${indent}${yamlKey(k)}:`);
        walk(child, `${indent}  `);
      }
    }
  };
  walk(root, '');
  return lines.join('\n') + '\n';
}

function pyScalar(v: Scalar): string {
  if (v === null) return 'None';
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  if (typeof v === 'number') return String(v);
  return JSON.stringify(v); // a JSON string is a valid Python str literal
}

export function pyValue(v: Scalar | Scalar[]): string {
  return Array.isArray(v) ? `[${v.map(pyScalar).join(', ')}]` : pyScalar(v);
}

/** A word for bash: plain when it is only safe characters, else single-quoted. */
export function shellWord(s: string): string {
  return /^[A-Za-z0-9_./:=+@%,-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/** A flag and its values as bash words: a true boolean is the flag alone, a false one nothing, a list its values. */
export function flagWords(k: Pick<Mapped, 'key' | 'value'>): string[] {
  const v = k.value;
  if (typeof v === 'boolean') return v ? [`--${k.key}`] : [];
  const vals = Array.isArray(v) ? v : [v];
  return [`--${k.key}`, ...vals.map((x) => shellWord(String(x)))];
}
