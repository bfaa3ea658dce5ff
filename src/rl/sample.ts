/**
 * Sampling completions for tasks from a policy backend: prompts encoded alone, several samples
 * per prompt, batched, stopped at EOS or the token limit, decoded to completion text. The
 * exploration switches plug in as a `constrain` hook (explore.ts).
 */
import type { JsSyntax } from '../analysis';
import type { PolicyBackend } from '../model/backend';
import type { GenerateOptions } from '../model/generate-common';
import type { TextTokenizer } from '../tokenizer/types';
import type { Task } from '../tasks/types';
import { chunks } from './data';
import { completionFormat, type PromptFormat } from './prompt-format';

export interface Sample {
  task: Task;
  /** prompt ids */
  prompt: number[];
  /** generated ids, EOS included when it was sampled */
  tokens: number[];
  /** the completion text (EOS excluded) */
  completion: string;
  /** log-prob of each generated id under the sampling distribution */
  logprobs: number[];
  finish: string;
  /** index of the sample's group (its prompt) in the call */
  group: number;
  /** syntax-constrained sampling: tokens rejected (and resampled) in this sample */
  syntaxRejections: number;
}

export interface SampleOptions {
  samplesPerTask: number;
  temperature: number;
  maxNewTokens: number;
  seed: number;
  /** sequences per generate call */
  batch?: number;
  /** builds a constrain hook for one batch of prompts (exploration); null = unconstrained */
  constrain?: (promptTexts: string[]) => GenerateOptions['constrain'] | null;
  /**
   * Syntax-constrained sampling: a sampled token that makes prompt + completion impossible to
   * complete as valid JavaScript (or an EOS that ends an invalid program) is rejected and
   * resampled at its position with it masked, which samples exactly from the policy restricted
   * to viable tokens (sequential rejection). Up to `syntaxRetries` rejections per sample.
   */
  syntax?: JsSyntax | null;
  syntaxRetries?: number;
  /** after each batch of sequences: how many of the call's samples are drawn */
  onProgress?: (done: number, total: number) => void;
  /** how prompts reach the model (prompt-format.ts); default plain completion */
  format?: PromptFormat;
  /** the ids of task k's prompt instead of the format's (a repair turn's conversation) */
  promptIds?: (k: number) => number[];
}

type Constrain = NonNullable<GenerateOptions['constrain']>;
type ConstrainOut = ReturnType<Constrain>;

/** Both constraints at once: biases add, allow-masks intersect. */
export function combineConstraints(a: ConstrainOut, b: ConstrainOut): ConstrainOut {
  if (!a) return b;
  if (!b) return a;
  let bias = a.bias ?? b.bias;
  if (a.bias && b.bias) bias = Float32Array.from(a.bias, (x, i) => x + b.bias![i]!);
  let allowMask = a.allowMask ?? b.allowMask;
  if (a.allowMask && b.allowMask) allowMask = Uint32Array.from(a.allowMask, (x, i) => x & b.allowMask![i]!);
  return { ...(bias ? { bias } : {}), ...(allowMask ? { allowMask } : {}) };
}

/**
 * Index of the first generated token that makes the program non-viable (or the EOS that ends
 * it invalid), or -1. `eosId` ends the program: it must then parse without errors.
 */
export function firstNonViable(syntax: JsSyntax, tok: TextTokenizer, prompt: string, tokens: readonly number[]): number {
  const checker = syntax.createPrefixChecker(prompt);
  try {
    if (!checker.canStillBeValid()) return -1; // the prompt itself cannot be fixed by a completion: nothing to constrain
    let text = '';
    for (let j = 0; j < tokens.length; j++) {
      if (tokens[j] === tok.eosId) return syntax.validate(prompt + text).valid ? -1 : j;
      const next = tok.decode(tokens.slice(0, j + 1));
      checker.push(next.slice(text.length));
      text = next;
      if (!checker.canStillBeValid()) return j;
    }
    return -1;
  } finally {
    checker.delete();
  }
}

/** Samples `samplesPerTask` completions per task; the order is task-major (task 0's samples first). */
export async function sampleTasks(
  backend: PolicyBackend,
  tok: TextTokenizer,
  tasks: readonly Task[],
  opts: SampleOptions,
): Promise<Sample[]> {
  const format = opts.format ?? completionFormat(tok);
  const rows = tasks.flatMap((task, group) => {
    const prompt = opts.promptIds?.(group) ?? format.taskIds(task.prompt, task.language);
    return Array.from({ length: opts.samplesPerTask }, () => ({ task, group, prompt: prompt.slice() }));
  });
  const maxT = backend.config.contextLength;
  for (const r of rows) {
    if (r.prompt.length + opts.maxNewTokens > maxT) {
      throw new Error(
        `task ${r.task.task_id}: prompt of ${r.prompt.length} tokens + ${opts.maxNewTokens} new tokens exceeds the model's context of ${maxT}`,
      );
    }
  }
  const out: Sample[] = [];
  let call = 0;
  const gen = async (prompts: number[][], texts: string[], maxNew: number, step0?: Uint32Array<ArrayBuffer>) => {
    const hook = opts.constrain?.(texts) ?? undefined;
    const words = Math.ceil(backend.config.vocabSize / 32);
    const constrain: Constrain | undefined =
      step0 || hook
        ? (step, generated) => {
            const own = hook?.(step, generated) ?? null;
            return step === 0 && step0 ? combineConstraints(own, { allowMask: step0.slice(0, prompts.length * words) }) : own;
          }
        : undefined;
    return backend.generate(prompts, {
      maxNewTokens: maxNew,
      temperature: opts.temperature,
      seed: (opts.seed * 7919 + call++) >>> 0,
      eosId: tok.eosId,
      ...(format.stop.length ? { stop: format.stop } : {}),
      constrain,
    });
  };
  for (const part of chunks(rows, opts.batch ?? 64)) {
    const res = await gen(
      part.map((r) => r.prompt),
      part.map((r) => r.task.prompt),
      opts.maxNewTokens,
    );
    const samples = part.map((r, i) => ({
      task: r.task,
      group: r.group,
      prompt: r.prompt,
      tokens: res.tokens[i]!,
      completion: '',
      logprobs: res.logprobs[i]!,
      finish: res.finish[i]! as string,
      syntaxRejections: 0,
    }));
    if (opts.syntax) await resampleNonViable(samples, opts.syntax, opts.syntaxRetries ?? 4, gen);
    for (const s of samples) {
      const text = tok.eosIds.includes(s.tokens[s.tokens.length - 1]!) ? s.tokens.slice(0, -1) : s.tokens;
      out.push({ ...s, completion: format.cut(tok.decode(text)) });
    }
    opts.onProgress?.(out.length, rows.length);
  }
  return out;

  /** Rounds of: find each sample's first non-viable token, ban it at that position, resample from there. */
  async function resampleNonViable(samples: Sample[], syntax: JsSyntax, retries: number, generate: typeof gen): Promise<void> {
    const V = backend.config.vocabSize;
    const words = Math.ceil(V / 32);
    // banned ids per (sample, position): a rejected token stays banned when that position is resampled again
    const banned = samples.map(() => new Map<number, Set<number>>());
    for (let round = 0; round < retries; round++) {
      const todo: { s: Sample; i: number; j: number }[] = [];
      samples.forEach((s, i) => {
        const j = firstNonViable(syntax, tok, s.task.prompt, s.tokens);
        if (j >= 0) todo.push({ s, i, j });
      });
      if (!todo.length) return;
      const mask = new Uint32Array(todo.length * words);
      todo.forEach(({ s, i, j }, k) => {
        s.syntaxRejections++;
        const ban = banned[i]!.get(j) ?? new Set<number>();
        ban.add(s.tokens[j]!);
        banned[i]!.set(j, ban);
        for (let v = 0; v < V; v++) if (!ban.has(v)) mask[k * words + (v >>> 5)]! |= 1 << (v & 31);
      });
      // one batched call, or one call per sample where the padded batch would overflow the context
      const fits =
        Math.max(...todo.map(({ s, j }) => s.prompt.length + j)) + Math.max(...todo.map(({ j }) => opts.maxNewTokens - j)) <=
        backend.config.contextLength;
      const groups = fits ? [todo.map((_, k) => k)] : todo.map((_, k) => [k]);
      for (const g of groups) {
        const items = g.map((k) => todo[k]!);
        const res = await generate(
          items.map(({ s, j }) => [...s.prompt, ...s.tokens.slice(0, j)]),
          items.map(({ s, j }) => s.task.prompt + tok.decode(s.tokens.slice(0, j))),
          Math.max(...items.map(({ j }) => opts.maxNewTokens - j)),
          Uint32Array.from(g.flatMap((k) => Array.from(mask.subarray(k * words, (k + 1) * words)))),
        );
        items.forEach(({ s, j }, k) => {
          const room = opts.maxNewTokens - j;
          s.tokens = [...s.tokens.slice(0, j), ...res.tokens[k]!.slice(0, room)];
          s.logprobs = [...s.logprobs.slice(0, j), ...res.logprobs[k]!.slice(0, room)];
          s.finish = res.tokens[k]!.length > room ? 'length' : res.finish[k]!;
        });
      }
    }
  }
}
