/**
 * Stage 0, setup. openRun's check of the run directory comes first: config.json (written for a new
 * run, matched for a resumed one), the KL reference the config names, and summary.json of a
 * finished run, which is returned as it is. Then the tasks (tasks/*.jsonl), the tokenizer trained
 * on the SFT data (tokenizer.json), the prompts checked against the context, and a KL reference
 * checked to fit, before SFT spends its minutes.
 */
import type { ModelConfig } from '../../policy';
import { trainTokenizer } from '../../tokenizer';
import type { TextTokenizer } from '../../tokenizer/types';
import type { RlConfig } from '../config';
import { readJson, readText, writeJson } from '../run-dir';
import { buildTaskSet, fitTaskSet, suiteJsonl, type TaskSet } from '../tasks';
import { readSuiteSource, SUITE_FILE, taskSetFromSuite } from '../tasks/from-suite';
import type { RunBase, RunContext } from './context';
import { evalSubset, type Summary } from './evaluation';
import { loadReference } from './rl';
import { isHfReference } from '../reference';
import { promptFormatFor } from '../prompt-format';

/** Where two configs differ, as `path (stored X, given Y)`, the first few. */
export function configDiff(stored: unknown, given: unknown, limit = 4): string[] {
  const out: string[] = [];
  const show = (v: unknown) => (v === undefined ? 'none' : JSON.stringify(v).slice(0, 80));
  const walk = (a: unknown, b: unknown, path: string): void => {
    if (out.length > limit) return;
    const obj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
    if (obj(a) && obj(b)) {
      for (const k of [...new Set([...Object.keys(a), ...Object.keys(b)])]) walk(a[k], b[k], path ? `${path}.${k}` : k);
    } else if (JSON.stringify(a) !== JSON.stringify(b)) {
      out.push(`${path} (stored ${show(a)}, given ${show(b)})`);
    }
  };
  walk(stored, given, '');
  return out.length > limit ? [...out.slice(0, limit), '…'] : out;
}

/**
 * The run directory's config.json, written for a new run, refused when it holds another config
 * or seed; the KL reference the config names, refused when not given (and one given that the
 * config does not name). Returns summary.json when the run is finished, else null.
 */
export async function checkRunDir(run: RunBase): Promise<Summary | null> {
  const { cfg, seed, store, options: o } = run;
  run.emit('setup', 0, 'tasks and tokenizer');
  const existing = await readJson<{ cfg: RlConfig; seed: number; backend: string }>(store, 'config.json');
  if (existing && (JSON.stringify(existing.cfg) !== JSON.stringify(cfg) || existing.seed !== seed)) {
    const what = existing.seed !== seed ? [`seed (stored ${existing.seed}, given ${seed})`] : configDiff(existing.cfg, cfg);
    throw new Error(
      `the run directory holds a run with a different config or seed: ${what.join('; ')}; resume it with the same settings, or use a new directory`,
    );
  }
  const named = cfg.rl.reference;
  if (named && !o.reference)
    throw new Error(
      `the run's KL reference is the ${isHfReference(named) ? 'Hugging Face model' : 'ONNX model'} "${named.name}" (SHA-256 ${named.sha256.slice(0, 12)}…), which was not given; pass it (coderl train --reference)`,
    );
  if (o.reference && !named)
    throw new Error(
      'a KL reference model was given but the config does not name it (config.rl.reference), so the run directory would not say what it was trained against',
    );
  const pre = run.policies.pretrained;
  if (cfg.pretrained && !pre)
    throw new Error(
      `the run trains the Hugging Face model "${cfg.pretrained.name}" (SHA-256 ${cfg.pretrained.sha256.slice(0, 12)}…), which was not given; pass it (coderl train --model DIR)`,
    );
  if (pre && !cfg.pretrained)
    throw new Error(
      'an imported model was given but the config does not name it (config.pretrained), so the run directory would not say what it trained',
    );
  if (!existing) await writeJson(store, 'config.json', { cfg, seed, backend: run.backend });
  const done = await readJson<Summary>(store, 'summary.json');
  if (done) run.emit('done', 1, 'the run is finished; its summary is in summary.json');
  return done;
}

/** Tasks, tokenizer, the context check and the reference check: the context every later stage reads. */
export async function setup(run: RunBase): Promise<RunContext> {
  const { cfg, store, options: o } = run;
  const drawn = await taskSet(run);
  // an imported model brings its tokenizer and shape (its folder's tokenizer.json stays with it);
  // the lab's GPT gets a tokenizer trained on the SFT data
  const pre = run.policies.pretrained;
  let tok: TextTokenizer;
  let model: ModelConfig;
  if (pre) {
    tok = pre.tokenizer;
    model = pre.config;
    if (model.contextLength !== cfg.model.contextLength)
      throw new Error(`the policies serve a context of ${model.contextLength} tokens, the config has ${cfg.model.contextLength}`);
  } else {
    const trained = trainTokenizer(
      [...drawn.train, ...drawn.val].map((t) => t.prompt + t.demonstration),
      { vocabSize: cfg.model.vocabSize },
    );
    await writeJson(store, 'tokenizer.json', trained.toJSON());
    tok = trained;
    model = { ...cfg.model, vocabSize: trained.vocabSize };
  }
  const format = promptFormatFor(
    cfg.promptFormat ?? 'auto',
    tok,
    pre ? `the model ${cfg.pretrained?.name ?? ''}`.trim() : "the lab's tokenizer",
  );
  if (format.kind === 'chat' && cfg.explore.syntax)
    throw new Error(
      'explore.syntax checks prompt + completion as JavaScript, and a chat completion ends with its closing code fence: turn explore.syntax off, or set promptFormat to "completion"',
    );
  const room = Math.max(cfg.rl.maxNewTokens, cfg.eval.maxNewTokens);
  const budget = model.contextLength - room;
  const { set, shortened, dropped } = fitTaskSet(drawn, (t) => format.taskIds(t.prompt, t.language).length <= budget, !cfg.tasks.suite);
  const empty = (['train', 'val', 'rl', 'heldout'] as const).filter((k) => drawn[k].length > 0 && set[k].length === 0);
  if (empty.length)
    throw new Error(
      `no ${empty.join(' or ')} task's prompt fits ${budget} tokens (the context of ${model.contextLength} less ${room} new tokens, ` +
        `the larger of rl.maxNewTokens and eval.maxNewTokens): lower them or raise model.contextLength` +
        (format.kind === 'chat' ? '; the prompts go through the chat template (promptFormat "completion" sends them as plain code)' : ''),
    );
  for (const k of ['train', 'val', 'rl', 'heldout'] as const) await store.write(`tasks/${k}.jsonl`, suiteJsonl(set[k]));
  const some = (ids: string[]) => `${ids.slice(0, 3).join(', ')}${ids.length > 3 ? ', …' : ''}`;
  const fitNote = [
    shortened.length ? `${shortened.length} io prompt(s) shown with fewer examples to fit the context (${some(shortened)})` : '',
    dropped.length ? `${dropped.length} task(s) left out, their prompt longer than ${budget} tokens (${some(dropped)})` : '',
  ].filter(Boolean);
  const spec = { config: model, tokenizer: tok };
  // a KL reference that cannot score this run's sequences (another tokenizer, a shorter context)
  // is refused now, not after SFT's minutes; it is loaded again, and kept, when PPO starts
  if (o.reference) (await loadReference(o.reference, spec)).dispose();
  run.emit(
    'setup',
    1,
    [
      `${set.train.length} train, ${set.val.length} val, ${set.rl.length} rl, ${set.heldout.length} held-out tasks; vocabulary ${tok.vocabSize}`,
      ...(pre ? [`policy: ${pre.describe()}`] : []),
      ...(format.kind === 'chat' ? ['prompts through the chat template'] : []),
      ...fitNote,
    ].join('; '),
  );
  const explore = o.exploreFor?.(tok);
  return { ...run, tok, spec, set, trainEval: evalSubset(set.train), rlEval: evalSubset(set.rl), explore, format };
}

/** The run's tasks: the built-in families, or the suite file the config names (checked against its hash). */
async function taskSet(run: RunBase): Promise<TaskSet> {
  const { cfg, seed, store, options: o } = run;
  const ref = cfg.tasks.suite;
  if (!ref) return buildTaskSet({ seed, ...cfg.tasks });
  let text = await readText(store, SUITE_FILE);
  if (text === null) {
    if (o.suiteText === undefined)
      throw new Error(
        `the run's tasks come from the suite file "${ref.name}", which is not in the run directory (${SUITE_FILE}); open the file again to start the run`,
      );
    text = o.suiteText;
  }
  const { tasks, ref: got } = await readSuiteSource(text, ref.name);
  if (got.sha256 !== ref.sha256) {
    throw new Error(
      `the suite file "${ref.name}" is not the one the run was started with (SHA-256 ${got.sha256.slice(0, 12)}…, the config has ${ref.sha256.slice(0, 12)}…); use a new run name for a changed file`,
    );
  }
  const other = tasks.find((t) => t.language !== 'javascript');
  if (other && (cfg.explore.syntax || cfg.explore.api !== 'off')) {
    throw new Error(
      `the suite file "${ref.name}" has ${other.language} tasks (${other.task_id}); syntax-constrained and API-guided exploration work on JavaScript only: turn explore.syntax and explore.api off`,
    );
  }
  await store.write(SUITE_FILE, text);
  return taskSetFromSuite(tasks, ref.name, { seed, ...cfg.tasks });
}
