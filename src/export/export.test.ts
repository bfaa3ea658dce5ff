/**
 * exportRun on real run directories (the lab's GPT with PPO; LoRA on the GPT-2 fixture with Dr.
 * GRPO), for each trainer: the data read back row by row (parquet with hyparquet, and pyarrow when
 * python3 has it), the config read back (YAML with the yaml package and PyYAML, train.py's literals
 * through Python's ast, the shell scripts run with a stub trainer that records its argv) holding
 * every mapped value, the model folder equal to what coderl export-hf writes, the suite, the
 * reward weights, NOTES naming every unmapped setting.
 */
import { readFileSync, mkdtempSync, existsSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parquetReadObjects } from 'hyparquet';
import { parse as parseYaml } from 'yaml';
import { beforeAll, describe, expect, test } from 'vitest';
import { main } from '../cli/main';
import { loadHfFolder } from '../hf/load';
import { nodeFolder } from '../hf/node';
import { parseSuite } from '../tasks/suite';
import { renderChat } from '../tokenizer/chat';
import { exportRun, type ExportResult } from '.';
import { labValue, type Mapped, type Trainer } from './mapping';
import { PASS_THROUGH_TEMPLATE } from './policy';
import { GPT2_FIXTURE, hasPython, python, runWithStub, trainLabRun, trainLoraRun } from './testing';

const root = mkdtempSync(join(tmpdir(), 'coderl-export-'));
let labRun = '';
let loraRun = '';
beforeAll(async () => {
  labRun = await trainLabRun(main, root);
  loraRun = await trainLoraRun(main, root);
}, 120_000);

const text = (...p: string[]) => readFileSync(join(...p), 'utf8');
const lines = (...p: string[]) =>
  text(...p)
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
const tasksOf = (run: string, split: string) => parseSuite(text(run, 'tasks', `${split}.jsonl`), split).items;
const stored = (run: string) => JSON.parse(text(run, 'config.json')) as { cfg: Record<string, unknown>; seed: number };

async function doExport(run: string, to: Trainer, extra: Partial<Parameters<typeof exportRun>[0]> = {}): Promise<ExportResult> {
  const out = join(root, `${run.split('/').pop()}-${to}-${Math.random().toString(36).slice(2, 8)}`);
  return exportRun({ run, to, out, serveUrl: 'http://10.1.2.3:8000', clientFile: null, ...extra });
}

/** A dotted key's value in a nested object. */
const at = (o: unknown, key: string) => key.split('.').reduce<unknown>((v, k) => (v as Record<string, unknown> | undefined)?.[k], o);

/** Each single-source key without a derivation holds the run's config.json value. */
function expectRunValues(mapped: readonly Mapped[], run: string) {
  const s = stored(run);
  const view = { cfg: s.cfg as never, seed: s.seed };
  let n = 0;
  for (const k of mapped)
    if (!k.how && k.from.length === 1 && !k.from[0]!.startsWith('code:')) {
      expect(k.value, `${k.key} = ${k.from[0]}`).toEqual(labValue(view, k.from[0]!));
      n++;
    }
  expect(n).toBeGreaterThan(5);
}

function expectSuiteAndReward(out: string, run: string) {
  const suite = parseSuite(text(out, 'tasks.jsonl'), 'tasks.jsonl');
  expect(suite.issues).toEqual([]);
  expect(suite.items.map((t) => t.task_id)).toEqual([...tasksOf(run, 'rl'), ...tasksOf(run, 'heldout')].map((t) => t.task_id));
  expect(JSON.parse(text(out, 'reward.json'))).toEqual(stored(run).cfg['reward']);
}

function expectNotes(r: ExportResult) {
  const notes = text(r.out, 'NOTES.md');
  const unmapped = r.mapping.notes.filter((n) => n.kind === 'unmapped');
  expect(unmapped.length).toBeGreaterThan(0);
  const section = notes.slice(notes.indexOf('## Used by the run'), notes.indexOf('## Carried'));
  for (const n of unmapped) expect(section, n.lab).toContain(`- \`${n.lab}\``);
  for (const k of r.mapping.mapped) expect(notes, k.key).toContain(`| \`${k.key}\` |`);
}

describe('export of a lab GPT run (PPO)', () => {
  test('veRL: parquet rows, coderl.yaml values and comments, run.sh, the model with a pass-through template', async () => {
    const r = await doExport(labRun, 'verl');
    const rl = tasksOf(labRun, 'rl');
    const heldout = tasksOf(labRun, 'heldout');
    for (const [file, tasks, split] of [
      ['train.parquet', rl, 'train'],
      ['test.parquet', heldout, 'test'],
    ] as const) {
      const rows = await parquetReadObjects({ file: new Uint8Array(readFileSync(join(r.out, 'data', file))).buffer });
      expect(rows).toHaveLength(tasks.length);
      rows.forEach((row, i) => {
        const t = tasks[i]!;
        expect(row).toEqual({
          data_source: `coderl/${String(t.meta?.['family'])}`,
          prompt: [{ role: 'user', content: t.prompt }],
          ability: 'code',
          reward_model: { style: 'rule', ground_truth: t.task_id },
          extra_info: {
            split,
            index: BigInt(i),
            task_id: t.task_id,
            language: 'javascript',
            entry_point: t.entry_point,
            prompt_format: 'completion',
            lab_split: split === 'train' ? 'rl' : 'heldout',
          },
        });
      });
    }
    const yamlText = text(r.out, 'coderl.yaml');
    const cfg = parseYaml(yamlText) as Record<string, unknown>;
    expect(cfg['defaults']).toEqual(['ppo_trainer', '_self_']);
    const yamlLines = yamlText.split('\n');
    for (const k of r.mapping.mapped) {
      expect(at(cfg, k.key), k.key).toEqual(k.value);
      const leaf = k.key.split('.').pop()!;
      const i = yamlLines.findIndex(
        (l, j) =>
          l
            .trim()
            .replace(/^'(\w+)'/, '$1')
            .startsWith(`${leaf}:`) && yamlLines[j - 1]!.includes(`source: ${k.source}`),
      );
      expect(i, `${k.key} has its source comment`).toBeGreaterThan(0);
    }
    expect(at(cfg, 'algorithm.adv_estimator')).toBe('gae');
    expectRunValues(r.mapping.mapped, labRun);
    if (hasPython('yaml')) {
      const py = JSON.parse(
        python('import json,sys,yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))', join(r.out, 'coderl.yaml')),
      );
      for (const k of r.mapping.mapped) expect(at(py, k.key), `PyYAML ${k.key}`).toEqual(k.value);
    }
    const argv = runWithStub(join(r.out, 'run.sh'), 'python3', {}, ['trainer.save_freq=5']);
    expect(argv.slice(0, 4)).toEqual(['-m', 'verl.trainer.main_ppo', `--config-path=${r.out}`, '--config-name=coderl']);
    const kv = new Map(argv.filter((a) => a.includes('=')).map((a) => [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)]));
    for (const f of [
      'data.train_files',
      'data.val_files',
      'actor_rollout_ref.model.path',
      'critic.model.path',
      'custom_reward_function.path',
    ])
      expect(existsSync(kv.get(f)!) || kv.get(f) === join(r.out, 'coderl_client.py'), f).toBe(true);
    expect(kv.get('custom_reward_function.name')).toBe('verl_compute_score');
    expect(kv.get('+ray_kwargs.ray_init.runtime_env.env_vars.CODERL_SERVE_URL')).toBe('http://10.1.2.3:8000');
    expect(kv.get('CODERL_SERVE_URL')).toBe('http://10.1.2.3:8000');
    expect(argv).toContain('trainer.save_freq=5');
    expect(argv.some((a) => a.includes('env_vars.CODERL_SERVE_TOKEN'))).toBe(false);
    // the token and a chosen suite reach the Ray reward workers only when set, Hydra-quoted
    expect(runWithStub(join(r.out, 'run.sh'), 'python3', { CODERL_SERVE_TOKEN: 's3cr3t-1', CODERL_SUITE: 'tasks.jsonl' })).toEqual(
      expect.arrayContaining([
        "+ray_kwargs.ray_init.runtime_env.env_vars.CODERL_SERVE_TOKEN='s3cr3t-1'",
        "+ray_kwargs.ray_init.runtime_env.env_vars.CODERL_SUITE='tasks.jsonl'",
      ]),
    );
    expect(() => runWithStub(join(r.out, 'run.sh'), 'python3', { CODERL_SERVE_TOKEN: "it's" })).toThrow(/CODERL_SERVE_TOKEN holds a quote/);
    expect(runWithStub(join(r.out, 'run.sh'), 'python3', { CODERL_SERVE_URL: 'http://h:1', EXPORT_DIR: '/shared/x' })).toEqual(
      expect.arrayContaining(['--config-path=/shared/x', 'data.train_files=/shared/x/data/train.parquet', 'CODERL_SERVE_URL=http://h:1']),
    );
    // the model: export-hf's folder of the same checkpoint, with the pass-through template that sends the code as it is
    const hf = join(root, 'export-hf-lab');
    expect(await main(['export-hf', '--checkpoint', join(labRun, 'policy.ckpt'), '--out', hf], { out: () => {}, err: () => {} })).toBe(0);
    expect(readFileSync(join(r.out, 'model', 'model.safetensors')).equals(readFileSync(join(hf, 'model.safetensors')))).toBe(true);
    const tc = JSON.parse(text(r.out, 'model', 'tokenizer_config.json'));
    expect(tc).toEqual({ ...JSON.parse(text(hf, 'tokenizer_config.json')), chat_template: PASS_THROUGH_TEMPLATE });
    expect(renderChat(PASS_THROUGH_TEMPLATE, [{ role: 'user', content: rl[0]!.prompt }], { addGenerationPrompt: true })).toBe(
      rl[0]!.prompt,
    );
    expect((await loadHfFolder(await nodeFolder(join(r.out, 'model')))).arch.hfArchitecture).toBe('GPT2LMHeadModel');
    expectSuiteAndReward(r.out, labRun);
    expectNotes(r);
    expect(text(r.out, 'README.md')).toMatch(/coderl serve --suite tasks\.jsonl --reward reward\.json[\s\S]*bash run\.sh/);
    expect(r.warnings.join('\n')).toMatch(/coderl_client\.py/);
  });

  test.skipIf(!hasPython('pyarrow'))('veRL: pyarrow reads the parquet as veRL does', async () => {
    const r = await doExport(labRun, 'verl');
    const got = JSON.parse(
      python(
        'import json,sys,pyarrow.parquet as pq; t=pq.read_table(sys.argv[1]); print(json.dumps({"schema": str(t.schema.field("prompt").type), "rows": t.to_pylist()}))',
        join(r.out, 'data', 'train.parquet'),
      ),
    );
    expect(got.schema).toBe('list<element: struct<role: string, content: string>>');
    expect(got.rows.map((x: { reward_model: { ground_truth: string } }) => x.reward_model.ground_truth)).toEqual(
      tasksOf(labRun, 'rl').map((t) => t.task_id),
    );
  });

  test('TRL: JSONL rows, train.py compiles and its SETTINGS are the mapping', async () => {
    const r = await doExport(labRun, 'trl');
    const rl = tasksOf(labRun, 'rl');
    const rows = lines(r.out, 'data', 'train.jsonl');
    expect(rows).toHaveLength(rl.length);
    rows.forEach((row, i) =>
      expect(row).toEqual({
        prompt: rl[i]!.prompt,
        task_id: rl[i]!.task_id,
        language: 'javascript',
        entry_point: rl[i]!.entry_point,
        prompt_format: 'completion',
        lab_split: 'rl',
        data_source: `coderl/${String(rl[i]!.meta?.['family'])}`,
      }),
    );
    expect(lines(r.out, 'data', 'test.jsonl').map((x) => x['task_id'])).toEqual(tasksOf(labRun, 'heldout').map((t) => t.task_id));
    const py = text(r.out, 'train.py');
    const want = Object.fromEntries(r.mapping.mapped.map((k) => [k.key, k.value]));
    for (const k of r.mapping.mapped) expect(py, k.key).toContain(`    # ${k.from[0]!.startsWith('code:') ? 'lab code' : k.from[0]}`);
    if (hasPython()) {
      python('import py_compile,sys; py_compile.compile(sys.argv[1], doraise=True)', join(r.out, 'train.py'));
      const program =
        'import ast,json,sys\nt=ast.parse(open(sys.argv[1]).read())\nv={n.targets[0].id: ast.literal_eval(n.value) for n in t.body if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name) and n.targets[0].id in ("SETTINGS","LORA")}\nprint(json.dumps(v))';
      const got = JSON.parse(python(program, join(r.out, 'train.py')));
      expect(got).toEqual({ SETTINGS: want, LORA: null });
    }
    expect(py).toContain('os.environ.setdefault("CODERL_SERVE_URL", "http://10.1.2.3:8000")');
    expect(py).toContain('reward_funcs=[trl_reward]');
    expectRunValues(r.mapping.mapped, labRun);
    expectSuiteAndReward(r.out, labRun);
    expectNotes(r);
    expect(r.mapping.notes.find((n) => n.lab === 'rl.algo')?.kind).toBe('unmapped'); // a PPO run in GRPOTrainer
  });

  test('OpenRLHF: JSONL rows and run.sh ends in train_ppo_ray with every mapped flag', async () => {
    const r = await doExport(labRun, 'openrlhf');
    expect(text(r.out, 'README.md')).toContain('CODERL_SERVE_URL=http://coderl:TOKEN@HOST:8000'); // OpenRLHF sends no auth header
    const heldout = tasksOf(labRun, 'heldout');
    const rows = lines(r.out, 'data', 'test.jsonl');
    rows.forEach((row, i) => {
      expect(row['input']).toBe(heldout[i]!.prompt);
      expect(row['label']).toBe(heldout[i]!.task_id);
      expect(row['datasource']).toBe(`coderl/${String(heldout[i]!.meta?.['family'])}`);
    });
    const argv = runWithStub(join(r.out, 'run.sh'), 'ray', { RAY_ADDRESS: 'http://head:8265' });
    expect(argv.slice(0, 6)).toEqual(['job', 'submit', '--address=http://head:8265', '--', 'python3', '-m']);
    expect(argv[6]).toBe('openrlhf.cli.train_ppo_ray');
    const flag = (name: string) => argv.indexOf(`--${name}`);
    for (const k of r.mapping.mapped) {
      const i = flag(k.key);
      if (k.value === false) expect(i, `${k.key} left out`).toBe(-1);
      else if (k.value === true) expect(i, k.key).toBeGreaterThan(0);
      else {
        const vals = Array.isArray(k.value) ? k.value : [k.value];
        expect(i, k.key).toBeGreaterThan(0);
        expect(argv.slice(i + 1, i + 1 + vals.length), k.key).toEqual(vals.map(String));
      }
    }
    expect(argv[flag('reward.remote_url') + 1]).toBe('http://10.1.2.3:8000/get_reward');
    expect(argv[flag('data.prompt_dataset') + 1]).toBe(join(r.out, 'data', 'train.jsonl'));
    expect(flag('data.apply_chat_template')).toBe(-1); // completion prompts go as they are
    expectRunValues(r.mapping.mapped, labRun);
    expectSuiteAndReward(r.out, labRun);
    expectNotes(r);
  });
});

describe('export of a LoRA run on an imported model (Dr. GRPO)', () => {
  test('TRL: the merged model and the adapter equal export-hf; LORA and the Dr. GRPO settings', async () => {
    const r = await doExport(loraRun, 'trl', { model: GPT2_FIXTURE });
    const quiet = { out: () => {}, err: () => {} };
    const ckpt = join(loraRun, 'policy.ckpt');
    const [merged, adapter] = [join(root, 'hf-merged'), join(root, 'hf-adapter')];
    expect(await main(['export-hf', '--model', GPT2_FIXTURE, '--checkpoint', ckpt, '--merge', '--out', merged], quiet)).toBe(0);
    expect(await main(['export-hf', '--model', GPT2_FIXTURE, '--checkpoint', ckpt, '--out', adapter], quiet)).toBe(0);
    for (const f of readdirSync(merged))
      expect(readFileSync(join(r.out, 'model', f)).equals(readFileSync(join(merged, f))), `model/${f}`).toBe(true);
    for (const f of readdirSync(adapter))
      expect(readFileSync(join(r.out, 'adapter', f)).equals(readFileSync(join(adapter, f))), `adapter/${f}`).toBe(true);
    const want = Object.fromEntries(r.mapping.mapped.map((k) => [k.key, k.value]));
    expect(want).toMatchObject({
      scale_rewards: 'none',
      loss_type: 'dapo',
      'peft.r': 4,
      'peft.lora_alpha': 8,
      'peft.target_modules': ['c_attn'],
    });
    if (hasPython()) {
      const got = JSON.parse(
        python(
          'import ast,json,sys\nt=ast.parse(open(sys.argv[1]).read())\nprint(json.dumps([ast.literal_eval(n.value) for n in t.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "LORA"][0]))',
          join(r.out, 'train.py'),
        ),
      );
      expect(got).toEqual({ r: 4, lora_alpha: 8, target_modules: ['c_attn'] });
    }
    expect(JSON.parse(text(r.out, 'export.json'))).toMatchObject({
      trainer: 'trl',
      promptFormat: 'completion',
      checkpoint: { kind: 'rl', finished: true },
    });
    expectRunValues(r.mapping.mapped, loraRun);
  });

  test('veRL: the LoRA keys, Dr. GRPO, the SFT checkpoint on request; the base model is required and checked', async () => {
    const r = await doExport(loraRun, 'verl', { model: GPT2_FIXTURE, checkpoint: 'sft' });
    const cfg = parseYaml(text(r.out, 'coderl.yaml'));
    expect(at(cfg, 'actor_rollout_ref.model.lora_rank')).toBe(4);
    expect(at(cfg, 'actor_rollout_ref.model.target_modules')).toEqual(['c_attn']);
    expect(at(cfg, 'algorithm.adv_estimator')).toBe('grpo');
    expect(at(cfg, 'algorithm.norm_adv_by_std_in_grpo')).toBe(false);
    expect(r.mapping.notes.find((n) => n.lab === 'rl.reference')?.kind).toBe('carried'); // the SFT policy is the reference
    expect(JSON.parse(text(r.out, 'export.json')).checkpoint.kind).toBe('sft');
    await expect(doExport(loraRun, 'verl')).rejects.toThrow(/trained the Hugging Face model "gpt2\/".*give its folder: --model DIR/);
    const llama = join(GPT2_FIXTURE, '..', 'llama');
    await expect(doExport(loraRun, 'verl', { model: llama })).rejects.toThrow(/--model .*llama: not the model the run trained/);
  });
});
