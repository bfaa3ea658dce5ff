/**
 * veRL's RL data as parquet (hyparquet-writer), in the schema its examples/data_preprocess
 * scripts produce through `datasets` and pyarrow: `prompt` a list of {role, content} structs (the
 * standard three-level LIST), `reward_model` and `extra_info` structs, `index` an int64.
 * verl/utils/dataset/rl_dataset.py reads it with datasets.load_dataset("parquet").
 */
import { parquetWriteBuffer } from 'hyparquet-writer';
import type { PromptFormatKind } from '../rl/prompt-format';
import { verlRow, type TaskRow } from './rows';

type SchemaElement = NonNullable<Parameters<typeof parquetWriteBuffer>[0]['schema']>[number];

const str = (name: string): SchemaElement => ({ name, type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' });
const struct = (name: string, children: SchemaElement[]): SchemaElement[] => [
  { name, repetition_type: 'OPTIONAL', num_children: children.length },
  ...children,
];

/** The extra_info fields, in verlRow's order; `index` is int64, the rest strings. */
export const VERL_EXTRA_INFO = ['split', 'index', 'task_id', 'language', 'entry_point', 'prompt_format', 'lab_split'] as const;

export const VERL_COLUMNS = ['data_source', 'prompt', 'ability', 'reward_model', 'extra_info'] as const;

const SCHEMA: SchemaElement[] = [
  { name: 'root', num_children: VERL_COLUMNS.length },
  str('data_source'),
  { name: 'prompt', repetition_type: 'OPTIONAL', converted_type: 'LIST', num_children: 1 },
  { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
  ...struct('element', [str('role'), str('content')]),
  str('ability'),
  ...struct('reward_model', [str('style'), str('ground_truth')]),
  ...struct(
    'extra_info',
    VERL_EXTRA_INFO.map((k) => (k === 'index' ? { name: k, type: 'INT64', repetition_type: 'OPTIONAL' } : str(k))),
  ),
];

/** The parquet file of a split's rows. */
export function verlParquet(rows: readonly TaskRow[], format: PromptFormatKind): Uint8Array {
  const data = rows.map((r) => {
    const row = verlRow(r, format);
    return { ...row, extra_info: { ...row.extra_info, index: BigInt(row.extra_info.index) } };
  });
  const columnData = VERL_COLUMNS.map((name) => ({ name, data: data.map((d) => d[name]) }));
  return new Uint8Array(parquetWriteBuffer({ columnData, schema: SCHEMA, createdBy: 'coderl export (hyparquet-writer)' }));
}
