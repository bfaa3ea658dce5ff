/**
 * A run that trains an imported Hugging Face model (config.pretrained, config.lora), in the terms
 * the app's Experiment panel, its run worker (run-browser.ts) and `coderl train --model DIR` share:
 * - pretrainedModelConfig: cfg.model is the model's shape at the run's context (policy/hf-train.ts
 *   hfModelConfig, from the architecture alone, so the page can write it before any weight is read);
 * - loraTargetNames / runLora: the module names LoRA can target, and the run's LoRA settings with
 *   the targets resolved (the architecture's default, model/lora.ts DEFAULT_LORA_TARGETS, when the
 *   config gives none);
 * - runMemoryPlan: the memory plan of one RL step (model/memory-plan.ts): every rollout of an
 *   iteration at the full context, with a value head, against MEMORY_BUDGET_GIB;
 * - pretrainedRunConfig: the config a run on the model records (the shape, the resolved targets),
 *   refusing a context longer than its positions and targets it does not have.
 * Only the architecture is needed (config.json), never the weights: the page imports this module.
 */
import { hfWeightFormat } from '../hf/load';
import type { WeightFormat } from '../kernels/weight_format';
import { archModelConfig, type DecoderArch } from '../model/arch';
import type { ModelConfig } from '../model/config';
import { DEFAULT_LORA_TARGETS, LoraError, linearModules, loraModules, type LoraConfig } from '../model/lora';
import { planMemory, type MemoryPlan } from '../model/memory-plan';
import { RlConfigError, type RlConfig } from './config';

/** The GPU memory (GiB) one step of an imported model may plan for (coderl train --memory-budget's default). */
export const MEMORY_BUDGET_GIB = 4;

/** The shape of the model at the run's context (model/arch.ts archModelConfig, as the policies' config). */
export const pretrainedModelConfig = (a: DecoderArch, contextLength: number): ModelConfig => archModelConfig(a, contextLength);

/** The linear modules' names LoRA can target, once each, in the layer's order (gpt2: c_attn, c_proj, c_fc). */
export function loraTargetNames(a: DecoderArch): string[] {
  return [...new Set(linearModules({ ...a, nLayer: 1 }).map((m) => m.path.split('.').pop()!))];
}

/** The run's LoRA settings with the targets resolved (alpha 2 x rank when an unvalidated config lacks it), or null (full fine-tuning). */
export function runLora(cfg: Pick<RlConfig, 'lora'>, a: DecoderArch): LoraConfig | null {
  const l = cfg.lora;
  return l
    ? { rank: l.rank, alpha: l.alpha ?? 2 * l.rank, targets: l.targets ? [...l.targets] : [...DEFAULT_LORA_TARGETS[a.family]] }
    : null;
}

/**
 * How the run keeps the model's matrices on the GPU: full fine-tuning trains them, so f32; LoRA's
 * frozen base as config.lora.baseDtype says, "auto" (absent) being the checkpoint's own 16-bit
 * dtype when all its tensors have one (hf/load.ts hfWeightFormat: exact), else f32.
 */
export function runWeightFormat(cfg: Pick<RlConfig, 'lora'>, dtypes: readonly string[]): WeightFormat {
  if (!cfg.lora) return 'f32';
  const d = cfg.lora.baseDtype ?? 'auto';
  return d === 'auto' ? hfWeightFormat(dtypes) : d;
}

/**
 * The memory plan of one RL step: every rollout of an iteration (prompts x samples) at the run's
 * context, a value head on top, the weights as runWeightFormat stores them (`dtypes`: the
 * checkpoint's, HfModel.dtypes); throws MemoryPlanError (with the numbers) when it does not fit.
 */
export function runMemoryPlan(
  cfg: Pick<RlConfig, 'lora' | 'model' | 'rl'>,
  a: DecoderArch,
  budgetBytes = MEMORY_BUDGET_GIB * 2 ** 30,
  dtypes: readonly string[] = ['F32'],
): MemoryPlan {
  return planMemory({
    arch: a,
    weightFormat: runWeightFormat(cfg, dtypes),
    lora: runLora(cfg, a),
    sequences: cfg.rl.promptsPerIteration * cfg.rl.samplesPerPrompt,
    seqLen: cfg.model.contextLength,
    valueHead: true,
    budgetBytes,
  });
}

/**
 * The config of a run on the model `folder` of architecture `a`: cfg.model its shape at the run's
 * context (at most its positions), the LoRA targets resolved and checked, so config.json says what
 * ran. Errors are RlConfigErrors naming the field and the folder.
 */
export function pretrainedRunConfig(cfg: RlConfig, a: DecoderArch, folder: string): RlConfig {
  const ctx = cfg.model.contextLength;
  if (ctx > a.maxPositions)
    throw new RlConfigError(`config.model.contextLength: ${ctx} exceeds the ${a.maxPositions} positions of ${folder}`);
  const lora = runLora(cfg, a);
  try {
    if (lora) loraModules(a, lora, 'config.lora'); // unknown targets: named now
  } catch (e) {
    if (e instanceof LoraError) throw new RlConfigError(`${folder}: ${e.message}`);
    throw e;
  }
  return { ...cfg, model: pretrainedModelConfig(a, ctx), ...(lora && cfg.lora ? { lora: { ...cfg.lora, targets: lora.targets } } : {}) };
}
