/**
 * Evaluate: `coderl eval` in the browser. A policy checkpoint (any `*.ckpt` of a stored run but
 * the reward model, one of the Checkpoints panel, an ONNX model imported there, or a Hugging Face
 * model of the Models panel, with the prompt format: auto, chat or completion) on a suite (a built-in benchmark
 * such as HumanEval-X JavaScript, shipped with the app; a stored run's split; or a JSONL / .jsonl.gz file the user
 * opens, its load issues listed by line), with n samples per task,
 * the k list, temperature, max new tokens, seed and an optional task limit. It runs in a worker
 * (store/evalSlice.ts) with progress and Stop; the result is the unbiased pass@k, pass@1 per
 * family and a sortable per-task table.
 */
import { useEffect, useId, useMemo, useState, type FormEvent } from 'react';
import { BUILTIN_SUITES, builtinSuiteLabel } from '../../tasks/builtin-suites';
import { formatIssue } from '../../tasks/types';
import { useLab } from '../../store';
import type { CheckpointInfo } from '../../lab/saved-models';
import { configSummary, metaEntries } from '../../lab/saved-models';
import {
  checkpointKey,
  DEFAULT_EVAL_FORM,
  parseEvalForm,
  policyProblem,
  splitLabel,
  suiteKey,
  type CheckpointRef,
  type EvalForm,
  type Split,
} from '../../store/evalSlice';
import type { TaskRow } from '../../rl/eval-suite';
import { PROMPT_FORMATS, type PromptFormatSetting } from '../../rl/prompt-format';
import { completeModels } from '../../store/modelsSlice';

interface CheckpointOption {
  key: string;
  ref: CheckpointRef;
  label: string;
  info: CheckpointInfo | null;
  /** why it cannot be evaluated; null when it can */
  problem: string | null;
  /** an imported ONNX or Hugging Face model's summary (it has no checkpoint header) */
  summary?: string;
  /** the model has a chat template (a Hugging Face model's tokenizer_config.json): the chat format is offered */
  chat?: boolean;
}

const FIELDS: { field: keyof EvalForm; label: string; hint?: string }[] = [
  { field: 'samples', label: 'Samples (n)', hint: 'per task' },
  { field: 'k', label: 'k values', hint: 'comma-separated, each 1..n' },
  { field: 'temperature', label: 'Temperature', hint: '0 is greedy (then n must be 1)' },
  { field: 'maxNewTokens', label: 'Max new tokens', hint: 'capped by the context' },
  { field: 'seed', label: 'Seed' },
  { field: 'limit', label: 'Task limit', hint: 'optional: the first N tasks' },
];

const pct = (x: number): string => (Number.isFinite(x) ? `${(x * 100).toFixed(1)}%` : '—');

/** Every checkpoint the panel offers, stored runs first. */
function useCheckpointOptions(): CheckpointOption[] {
  const runs = useLab((s) => s.evaluation.runs);
  const stored = useLab((s) => s.checkpoints.items);
  const onnx = useLab((s) => s.evaluation.onnxModels);
  const hf = useLab((s) => s.models.items);
  return useMemo(
    () => [
      ...runs.flatMap((r) =>
        r.checkpoints.map((c): CheckpointOption => {
          const ref: CheckpointRef = { kind: 'run', run: r.run, file: c.file };
          return { key: checkpointKey(ref), ref, label: `${r.run} / ${c.file}`, info: c.info, problem: c.problem ?? policyProblem(c.info) };
        }),
      ),
      ...stored.map((c): CheckpointOption => {
        const ref: CheckpointRef = { kind: 'stored', name: c.name };
        return { key: checkpointKey(ref), ref, label: c.name, info: c.info, problem: c.problem ?? policyProblem(c.info) };
      }),
      ...onnx.map((m): CheckpointOption => {
        const ref: CheckpointRef = { kind: 'onnx', name: m.name };
        const summary = `ONNX model, vocabulary ${m.vocabSize}, context ${m.contextLength}; runs in onnxruntime-web (wasm)`;
        return { key: checkpointKey(ref), ref, label: `ONNX: ${m.name}`, info: null, problem: null, summary };
      }),
      ...completeModels(hf).map((m): CheckpointOption => {
        const ref: CheckpointRef = { kind: 'hf', id: m.id };
        const s = m.manifest.summary;
        const summary = `${s.description}; ${s.chatTemplate ? 'a chat template' : 'no chat template'}; runs on the lab's engine`;
        const label = `HF: ${m.manifest.name}${m.id !== m.manifest.name ? ` (${m.id})` : ''}`;
        return { key: checkpointKey(ref), ref, label, info: null, problem: null, summary, chat: s.chatTemplate };
      }),
    ],
    [runs, stored, onnx, hf],
  );
}

export function EvalPanel() {
  const scan = useLab((s) => s.scanEvalSources);
  const scanning = useLab((s) => s.evaluation.scanning);
  const scanError = useLab((s) => s.evaluation.scanError);
  const runNames = useLab((s) => s.run.runs.join('\n'));
  const runStatus = useLab((s) => s.run.status);
  const status = useLab((s) => s.evaluation.status);
  const suite = useLab((s) => s.evaluation.suite);
  const start = useLab((s) => s.startEval);
  const stop = useLab((s) => s.stopEval);
  const options = useCheckpointOptions();
  const [ckpt, setCkpt] = useState('');
  const [form, setForm] = useState<EvalForm>(DEFAULT_EVAL_FORM);
  const [backend, setBackend] = useState<'auto' | 'cpu'>('auto');
  const id = useId();

  // the stored runs change when a run is imported, started or finishes
  useEffect(() => {
    if (runStatus !== 'running' && runStatus !== 'stopping') void scan();
  }, [scan, runNames, runStatus]);

  const chosen = options.find((o) => o.key === ckpt) ?? null;
  const { settings, problems } = useMemo(() => parseEvalForm(form), [form]);
  const running = status === 'running';
  const formatOk = form.format !== 'chat' || (chosen?.chat ?? false);
  const ready = settings !== null && chosen !== null && chosen.problem === null && formatOk && (suite?.tasks.length ?? 0) > 0;

  const submit = (e: FormEvent): void => {
    e.preventDefault();
    if (ready && !running) void start(chosen.ref, settings, backend);
  };

  return (
    <div className="eval" data-testid="eval">
      <form className="exp-form eval-form" onSubmit={submit} aria-label="Evaluation settings">
        <label htmlFor={`${id}-ckpt`}>Checkpoint</label>
        <div>
          <div className="eval-pick">
            <select
              id={`${id}-ckpt`}
              value={ckpt}
              disabled={running}
              onChange={(e) => setCkpt(e.target.value)}
              data-testid="eval-checkpoint"
            >
              <option value="">
                {options.length ? 'Choose a checkpoint…' : scanning ? 'Reading the stored runs…' : 'No checkpoints stored yet'}
              </option>
              {groupBy(options, (o) =>
                o.ref.kind === 'run'
                  ? `Run ${o.ref.run}`
                  : o.ref.kind === 'onnx'
                    ? 'Imported ONNX models'
                    : o.ref.kind === 'hf'
                      ? 'Hugging Face models'
                      : 'Checkpoints panel',
              ).map(([group, items]) => (
                <optgroup key={group} label={group}>
                  {items.map((o) => (
                    <option key={o.key} value={o.key} disabled={o.problem !== null}>
                      {o.label}
                      {o.problem ? ` (${o.problem})` : ''}
                    </option>
                  ))}
                </optgroup>
              ))}
            </select>
            <button type="button" onClick={() => void scan()} disabled={scanning} data-testid="eval-refresh">
              Refresh
            </button>
          </div>
          {chosen?.info && <CheckpointSummary info={chosen.info} />}
          {chosen?.summary && (
            <p className="hint" data-testid="eval-ckpt-config">
              {chosen.summary}
            </p>
          )}
          <RewardModelsHint />
          {scanError && (
            <p className="field-error" role="alert">
              {scanError}
            </p>
          )}
        </div>
        <label htmlFor={`${id}-suite`}>Suite</label>
        <SuitePicker id={`${id}-suite`} disabled={running} />
        {FIELDS.map(({ field, label, hint }) => (
          <Field
            key={field}
            id={`${id}-${field}`}
            field={field}
            label={label}
            hint={hint}
            value={form[field]}
            problem={problems[field]}
            disabled={running}
            onChange={(v) => setForm((f) => ({ ...f, [field]: v }))}
          />
        ))}
        <FormatField
          id={`${id}-format`}
          value={form.format}
          chat={chosen?.chat ?? false}
          disabled={running}
          onChange={(format) => setForm((f) => ({ ...f, format }))}
        />
        <label htmlFor={`${id}-backend`}>Backend</label>
        <select
          id={`${id}-backend`}
          value={backend}
          disabled={running}
          onChange={(e) => setBackend(e.target.value as 'auto' | 'cpu')}
          data-testid="eval-backend"
        >
          <option value="auto">auto: webgpu on a hardware GPU, cpu on a software one</option>
          <option value="cpu">cpu (the float64 reference)</option>
        </select>
        <div className="exp-buttons">
          <button type="submit" disabled={!ready || running} data-testid="eval-start">
            Start
          </button>
          <button type="button" onClick={stop} disabled={!running} data-testid="eval-stop">
            Stop
          </button>
        </div>
      </form>
      <EvalStatusView />
      <ReportView />
    </div>
  );
}

function groupBy<T>(items: T[], key: (t: T) => string): [string, T[]][] {
  const out = new Map<string, T[]>();
  for (const t of items) out.set(key(t), [...(out.get(key(t)) ?? []), t]);
  return [...out];
}

function Field(p: {
  id: string;
  field: keyof EvalForm;
  label: string;
  hint?: string;
  value: string;
  problem?: string;
  disabled: boolean;
  onChange(v: string): void;
}) {
  const described = [p.hint ? `${p.id}-hint` : '', p.problem ? `${p.id}-error` : ''].filter(Boolean).join(' ');
  return (
    <>
      <label htmlFor={p.id}>{p.label}</label>
      <div>
        <input
          id={p.id}
          value={p.value}
          disabled={p.disabled}
          inputMode={p.field === 'k' ? 'text' : 'decimal'}
          aria-invalid={p.problem !== undefined}
          aria-describedby={described || undefined}
          onChange={(e) => p.onChange(e.target.value)}
          data-testid={`eval-${p.field}`}
        />
        {p.hint && (
          <span id={`${p.id}-hint`} className="hint">
            {' '}
            {p.hint}
          </span>
        )}
        {p.problem && (
          <p id={`${p.id}-error`} className="field-error" data-testid={`eval-${p.field}-error`}>
            {p.problem}
          </p>
        )}
      </div>
    </>
  );
}

const FORMAT_TEXT: Record<PromptFormatSetting, string> = {
  auto: 'auto (chat with a chat template)',
  chat: 'chat (the chat template)',
  completion: 'completion (plain prompt)',
};

/** How prompts reach the model; chat only for a model with a chat template (an imported Hugging Face instruct model). */
function FormatField(p: {
  id: string;
  value: PromptFormatSetting;
  chat: boolean;
  disabled: boolean;
  onChange(v: PromptFormatSetting): void;
}) {
  const bad = p.value === 'chat' && !p.chat;
  return (
    <>
      <label htmlFor={p.id}>Prompt format</label>
      <div>
        <select
          id={p.id}
          value={p.value}
          disabled={p.disabled}
          aria-invalid={bad}
          onChange={(e) => p.onChange(e.target.value as PromptFormatSetting)}
          data-testid="eval-format"
        >
          {PROMPT_FORMATS.map((f) => (
            <option key={f} value={f} disabled={f === 'chat' && !p.chat}>
              {FORMAT_TEXT[f]}
              {f === 'chat' && !p.chat ? ' (this model has none)' : ''}
            </option>
          ))}
        </select>
        {bad && (
          <p className="field-error" data-testid="eval-format-error">
            This model has no chat template: use auto or completion.
          </p>
        )}
      </div>
    </>
  );
}

function CheckpointSummary({ info }: { info: CheckpointInfo }) {
  const meta = metaEntries(info.meta)
    .filter(([k]) => k !== 'optimizerStep')
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  return (
    <p className="hint" data-testid="eval-ckpt-config">
      {info.config ? configSummary(info.config) : 'no valid config'}
      {info.paramCount !== null && <>, {info.paramCount.toLocaleString('en-US')} parameters</>}
      {info.tokenizerVocab !== null && <>; tokenizer of {info.tokenizerVocab} tokens</>}
      {meta && <>; {meta}</>}
    </p>
  );
}

function RewardModelsHint() {
  const rms = useLab((s) => s.evaluation.runs.flatMap((r) => r.rewardModels.map((f) => `${r.run}/${f}`)).join(', '));
  return rms ? <p className="hint">Not listed (reward models, not policies): {rms}</p> : null;
}

function SuitePicker({ id, disabled }: { id: string; disabled: boolean }) {
  const runs = useLab((s) => s.evaluation.runs);
  const suite = useLab((s) => s.evaluation.suite);
  const fileSuite = useLab((s) => s.evaluation.fileSuite);
  const suiteError = useLab((s) => s.evaluation.suiteError);
  const loadBuiltin = useLab((s) => s.loadBuiltinSuite);
  const loadRunSuite = useLab((s) => s.loadRunSuite);
  const openFile = useLab((s) => s.openSuiteFile);
  const chooseFile = useLab((s) => s.chooseFileSuite);
  const fileId = useId();
  const onChange = (v: string): void => {
    if (v.startsWith('file:')) return chooseFile();
    if (v.startsWith('builtin:')) return void loadBuiltin(v.slice('builtin:'.length));
    const m = /^run:(.*)\/(\w+)$/.exec(v);
    if (m) void loadRunSuite(m[1]!, m[2] as Split);
  };
  const families = suite ? [...new Set(suite.tasks.map((t) => t.meta?.family).filter((f) => typeof f === 'string'))] : [];
  return (
    <div>
      <select
        id={id}
        value={suite ? suiteKey(suite.ref) : ''}
        disabled={disabled}
        onChange={(e) => onChange(e.target.value)}
        data-testid="eval-suite"
      >
        <option value="">Choose a suite…</option>
        <optgroup label="Built-in benchmarks">
          {BUILTIN_SUITES.map((b) => (
            <option key={b.name} value={suiteKey({ kind: 'builtin', name: b.name })}>
              {builtinSuiteLabel(b)}
            </option>
          ))}
        </optgroup>
        {runs
          .filter((r) => r.splits.length)
          .map((r) => (
            <optgroup key={r.run} label={`Run ${r.run}`}>
              {r.splits.map((s) => (
                <option key={s} value={suiteKey({ kind: 'run', run: r.run, split: s })}>
                  {splitLabel(s)} (tasks/{s}.jsonl)
                </option>
              ))}
            </optgroup>
          ))}
        {fileSuite && (
          <optgroup label="Opened file">
            <option value={suiteKey(fileSuite.ref)}>{fileSuite.ref.kind === 'file' ? fileSuite.ref.name : fileSuite.label}</option>
          </optgroup>
        )}
      </select>
      <div className="eval-file">
        <label htmlFor={fileId}>Open a suite file (.jsonl, .jsonl.gz)</label>{' '}
        <input
          id={fileId}
          type="file"
          accept=".jsonl,.gz,.json,application/jsonl,application/gzip"
          disabled={disabled}
          data-testid="eval-suite-file"
          onChange={(e) => {
            const input = e.currentTarget;
            const file = input.files?.[0];
            if (file) void openFile(file).finally(() => (input.value = '')); // the same file can be opened again
          }}
        />
      </div>
      {suiteError && (
        <p className="field-error" role="alert" data-testid="eval-suite-error">
          {suiteError}
        </p>
      )}
      {suite && (
        <p className="hint" data-testid="eval-suite-info" data-tasks={suite.tasks.length} data-issues={suite.issues.length}>
          {suite.label}: {suite.tasks.length} valid task{suite.tasks.length === 1 ? '' : 's'}
          {families.length > 0 && <>, families {families.join(', ')}</>}
          {suite.issues.length > 0 && (
            <>
              ; {suite.issues.length} line{suite.issues.length === 1 ? '' : 's'} skipped
            </>
          )}
        </p>
      )}
      {suite && suite.issues.length > 0 && (
        <ul className="field-error eval-issues" aria-label="Suite load issues" data-testid="eval-suite-issues">
          {suite.issues.map((i, n) => (
            <li key={n} data-line={i.line}>
              {formatIssue(i)}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

function EvalStatusView() {
  const e = useLab((s) => s.evaluation);
  if (e.status === 'idle') return null;
  const p = e.progress;
  return (
    <div className="exp-run" data-testid="eval-run" data-status={e.status} aria-live="polite">
      <p className="exp-status">
        Evaluation: <strong data-testid="eval-status">{e.status}</strong>
        {e.backend && <> on the {e.backend} backend</>}
      </p>
      {e.note && (
        <p className="alert" data-testid="eval-note">
          {e.note}
        </p>
      )}
      {e.status === 'running' && (
        <p className="eval-progress">
          <progress max={p?.total || 1} value={p?.done ?? 0} aria-label="Evaluation progress" data-testid="eval-progress" />{' '}
          <span className="hint" data-testid="eval-progress-text">
            {p ? `${p.stage === 'sampling' ? 'Sampling' : 'Scoring'}: ${p.done} / ${p.total} tasks` : 'Starting the eval worker…'}
          </span>
        </p>
      )}
      {e.status === 'stopped' && <p className="hint">Stopped; nothing was kept.</p>}
      {e.error && (
        <p role="alert" className="alert" data-testid="eval-error">
          {e.error}
        </p>
      )}
    </div>
  );
}

function ReportView() {
  const r = useLab((s) => (s.evaluation.status === 'done' ? s.evaluation.report : null));
  const job = useLab((s) => s.evaluation.job);
  if (!r || !job) return null;
  const unfit = r.rows.filter((x) => x.unfit).length;
  const { settings: s } = job;
  return (
    <div className="eval-result" data-testid="eval-result">
      <h3>Result</h3>
      <p className="hint" data-testid="eval-result-info">
        {r.tasks} task{r.tasks === 1 ? '' : 's'} × {s.samples} sample{s.samples === 1 ? '' : 's'} at temperature {s.temperature}, seed{' '}
        {s.seed}, up to {r.maxNewTokens} new tokens,{' '}
        <strong data-testid="eval-result-format" data-format={r.format}>
          {r.format} prompts
        </strong>
        {s.format && s.format !== r.format ? ` (format ${s.format})` : ''}, {r.backend} backend, {r.seconds.toFixed(1)} s
        {unfit > 0 && (
          <>
            {' '}
            · {unfit} task{unfit === 1 ? '' : 's'} left out: the prompt does not fit the context of {r.contextLength}
          </>
        )}
      </p>
      <table data-testid="eval-passk">
        <thead>
          <tr>
            <th scope="col">metric</th>
            <th scope="col">value</th>
          </tr>
        </thead>
        <tbody>
          {Object.entries(r.passAtK).map(([k, v]) => (
            <tr key={k}>
              <th scope="row">{k}</th>
              <td data-testid={`eval-${k.replace('@', '-')}`} data-value={v}>
                {v.toFixed(4)}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {Object.keys(r.byFamily).length > 0 && (
        <table data-testid="eval-families">
          <thead>
            <tr>
              <th scope="col">family</th>
              <th scope="col">pass@1</th>
            </tr>
          </thead>
          <tbody>
            {Object.entries(r.byFamily).map(([f, v]) => (
              <tr key={f}>
                <th scope="row">{f}</th>
                <td data-testid={`eval-family-${f}`} data-value={v}>
                  {pct(v)}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <TaskTable rows={r.rows} />
    </div>
  );
}

type SortKey = 'order' | 'task' | 'family' | 'passed' | 'error';
const COLUMNS: { key: Exclude<SortKey, 'order'>; label: string }[] = [
  { key: 'task', label: 'Task' },
  { key: 'family', label: 'Family' },
  { key: 'passed', label: 'Passed' },
  { key: 'error', label: 'First error' },
];

function compare(key: SortKey, a: TaskRow & { order: number }, b: TaskRow & { order: number }): number {
  const text = (x: string | null, y: string | null) => (x ?? '').localeCompare(y ?? '');
  const rate = (x: TaskRow) => (x.total ? x.passed / x.total : -1); // unfit tasks below every sampled one
  switch (key) {
    case 'task':
      return text(a.task_id, b.task_id);
    case 'family':
      return text(a.family, b.family);
    case 'passed':
      return rate(a) - rate(b) || a.passed - b.passed;
    case 'error':
      return text(a.error, b.error);
    default:
      return a.order - b.order;
  }
}

/** The per-task table: suite order until a column header is pressed (again: the other direction). */
function TaskTable({ rows }: { rows: TaskRow[] }) {
  const [sort, setSort] = useState<{ key: SortKey; dir: 1 | -1 }>({ key: 'order', dir: 1 });
  const sorted = useMemo(
    () => rows.map((r, order) => ({ ...r, order })).sort((a, b) => sort.dir * compare(sort.key, a, b) || a.order - b.order),
    [rows, sort],
  );
  const press = (key: SortKey): void => setSort((s) => ({ key, dir: s.key === key ? (s.dir === 1 ? -1 : 1) : 1 }));
  return (
    <>
      <h3>Tasks ({rows.length})</h3>
      <div className="eval-tasks" role="region" aria-label="Per-task results" tabIndex={0}>
        <table data-testid="eval-tasks">
          <thead>
            <tr>
              {COLUMNS.map((c) => (
                <th key={c.key} scope="col" aria-sort={sort.key === c.key ? (sort.dir === 1 ? 'ascending' : 'descending') : 'none'}>
                  <button type="button" className="eval-sort" onClick={() => press(c.key)} data-testid={`eval-sort-${c.key}`}>
                    {c.label}
                    {sort.key === c.key ? (sort.dir === 1 ? ' ▲' : ' ▼') : ''}
                  </button>
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {sorted.map((r) => (
              <tr
                key={r.task_id}
                data-testid="eval-task"
                data-task={r.task_id}
                data-passed={r.passed}
                data-total={r.total}
                data-unfit={String(r.unfit)}
              >
                <td>
                  <code>{r.task_id}</code>
                </td>
                <td>{r.family ?? ''}</td>
                <td className={r.unfit ? '' : r.passed > 0 ? 'ok' : 'bad'}>{r.unfit ? '—' : `${r.passed}/${r.total}`}</td>
                <td className="eval-error-cell">{r.error ?? ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}
