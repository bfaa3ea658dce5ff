/** JSONL reading with line numbers: every bad line becomes an issue, the good lines still load. */
import type { LoadIssue } from './types';
import { errorText } from '../util/errors';

export interface JsonlRecord {
  line: number;
  value: Record<string, unknown>;
}

export function parseJsonl(text: string, file: string): { records: JsonlRecord[]; issues: LoadIssue[] } {
  const records: JsonlRecord[] = [];
  const issues: LoadIssue[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const raw = (lines[i] ?? '').replace(/\r$/, '');
    if (raw.trim() === '') continue;
    const line = i + 1;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (e) {
      issues.push({ file, line, message: `bad JSON: ${errorText(e)}` });
      continue;
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      issues.push({
        file,
        line,
        message: `expected a JSON object, got ${Array.isArray(value) ? 'an array' : value === null ? 'null' : typeof value}`,
      });
      continue;
    }
    records.push({ line, value: value as Record<string, unknown> });
  }
  return { records, issues };
}

/** Checks that `fields` are strings; returns the problems, one string each. */
export function missingStrings(obj: Record<string, unknown>, fields: readonly string[]): string[] {
  const out: string[] = [];
  for (const f of fields) {
    const v = obj[f];
    if (v === undefined) out.push(`missing field '${f}'`);
    else if (typeof v !== 'string')
      out.push(`field '${f}' must be a string, got ${v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v}`);
  }
  return out;
}
