/**
 * `--model DIR` for the CLI: a Hugging Face model folder loaded and checked (hf/load.ts), then
 * made a frozen policy on the chosen backend (policy/hf.ts). Errors are the loader's, which name
 * the folder, the file and the field or tensor.
 */
import { nodeProvider } from '../gpu/node';
import { GpuRuntime } from '../gpu/runtime';
import { describeHfModel, loadHfFolder, type HfModel } from '../hf/load';
import { nodeFolder } from '../hf/node';
import type { BackendKind } from '../model/backend';
import { HfPolicy } from '../policy/hf';
import { PROMPT_FORMATS, type PromptFormatSetting } from '../rl/prompt-format';
import { intOption, UsageError, type Io, type Options } from './command';
import { errorText } from '../util/errors';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ADAPTER_CONFIG, ADAPTER_WEIGHTS, mergeLora, readLoraAdapter, type LoraAdapter } from '../hf/peft';
import { hfReferenceName } from '../rl/reference-hf';
import { sha256Hex } from '../rl/tasks/from-suite';

/** Runs `f`; an error from reading the user's input becomes a usage error (exit 2) with the message as it is. */
export async function asUsage<T>(cmd: string, f: () => T | Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (e) {
    if (e instanceof UsageError) throw e;
    throw new UsageError(`coderl ${cmd}: ${errorText(e)}`, { cause: e });
  }
}

export async function loadModelOption(cmd: string, dir: string | boolean | undefined): Promise<HfModel> {
  if (typeof dir !== 'string') throw new UsageError(`coderl ${cmd}: --model DIR is required (a Hugging Face model folder)`);
  return asUsage(cmd, async () => loadHfFolder(await nodeFolder(dir)));
}

export function formatOption(cmd: string, v: string | boolean | undefined): PromptFormatSetting {
  const f = v === undefined ? 'auto' : v;
  if (typeof f !== 'string' || !(PROMPT_FORMATS as readonly string[]).includes(f)) {
    throw new UsageError(`coderl ${cmd}: --format must be ${PROMPT_FORMATS.join(', ')}, got '${String(f)}'`);
  }
  return f as PromptFormatSetting;
}

/** An open policy and the runtime it needs; close() frees both. */
export interface OpenHfPolicy {
  model: HfModel;
  policy: HfPolicy;
  close(): void;
}

/**
 * --adapter ADIR: a LoRA adapter in PEFT's format (adapter_config.json, adapter_model.safetensors;
 * hf/peft.ts checks it against the model) read from ADIR, with its record ({name: "ADIR/", sha256 of
 * `sha256sum adapter_config.json adapter_model.safetensors`}).
 */
export async function adapterOption(
  cmd: string,
  dir: string | boolean | undefined,
  model: HfModel,
): Promise<{ adapter: LoraAdapter; ref: { name: string; sha256: string } } | null> {
  if (dir === undefined) return null;
  if (typeof dir !== 'string' || !dir) throw new UsageError(`coderl ${cmd}: --adapter takes a PEFT adapter folder`);
  return asUsage(cmd, async () => {
    const read = async (f: string) =>
      new Uint8Array(
        await readFile(join(dir, f)).catch(() => {
          throw new Error(`${dir}: no ${f} (a PEFT adapter folder holds ${ADAPTER_CONFIG} and ${ADAPTER_WEIGHTS})`);
        }),
      );
    const [cfgBytes, weights] = [await read(ADAPTER_CONFIG), await read(ADAPTER_WEIGHTS)];
    let json: unknown;
    try {
      json = JSON.parse(new TextDecoder().decode(cfgBytes));
    } catch (e) {
      throw new Error(`${join(dir, ADAPTER_CONFIG)}: not JSON: ${errorText(e)}`, { cause: e });
    }
    const adapter = readLoraAdapter(model.arch, json, weights, dir);
    const lines = `${await sha256Hex(cfgBytes)}  ${ADAPTER_CONFIG}\n${await sha256Hex(weights)}  ${ADAPTER_WEIGHTS}\n`;
    return { adapter, ref: { name: hfReferenceName(dir), sha256: await sha256Hex(lines) } };
  });
}

export async function openHfPolicy(cmd: string, options: Options, backend: BackendKind, io: Io, quiet = false): Promise<OpenHfPolicy> {
  let model = await loadModelOption(cmd, options.model);
  const adapter = await adapterOption(cmd, options.adapter, model);
  if (adapter) {
    model = { ...model, ...mergeLora(model.arch, model.weights, adapter.adapter) };
    if (!quiet)
      io.err(
        `coderl ${cmd}: ${options.adapter}: LoRA r${adapter.adapter.config.rank} on ${adapter.adapter.modules.length} modules, merged into the weights`,
      );
  }
  const contextLength = intOption(cmd, options, 'context', 2);
  if (!quiet) io.err(`coderl ${cmd}: ${model.folder}: ${describeHfModel(model)}, read in ${(model.loadMs / 1000).toFixed(1)} s`);
  const rt = backend === 'webgpu' ? await GpuRuntime.create(await nodeProvider()) : null;
  try {
    const policy = new HfPolicy(model, { backend, runtime: rt ?? undefined, contextLength });
    return {
      model,
      policy,
      close: () => {
        policy.dispose();
        rt?.dispose();
      },
    };
  } catch (e) {
    rt?.dispose();
    throw e;
  }
}
