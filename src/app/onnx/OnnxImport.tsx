/**
 * "Import ONNX model": a user's causal LM and its tokenizer file, checked by src/onnx/import.ts
 * (errors inline, naming the file and the problem), loaded in onnxruntime-web and kept in memory
 * while the page is open; a prompt box samples a completion from it, as a policy would. A model
 * that loads is also kept in the store (its files' contents) for the Evaluate panel's pass@k and
 * the Experiment setup's KL reference.
 */
import { useEffect, useId, useRef, useState, type FormEvent } from 'react';
import type { ImportedModel } from '../../onnx/import';
import type { BrowserEp } from '../../onnx/browser';
import { referenceRef } from '../../rl/reference';
import { useLab } from '../../store';
import { importUserModel, sampleFrom, type Sample } from './actions';
import { errorText } from '../../util/errors';
import { parseContextLength } from './files';

const hasWebGpu = typeof navigator !== 'undefined' && 'gpu' in navigator;

export function OnnxImport() {
  const id = useId();
  const modelInput = useRef<HTMLInputElement>(null);
  const tokInput = useRef<HTMLInputElement>(null);
  const [ep, setEp] = useState<BrowserEp>(hasWebGpu ? 'webgpu' : 'wasm');
  const [context, setContext] = useState('');
  const [loading, setLoading] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [model, setModel] = useState<{ m: ImportedModel; ep: BrowserEp; file: string } | null>(null);
  /** finished load attempts (tests wait for the next one) */
  const [attempts, setAttempts] = useState(0);
  const addOnnxModel = useLab((s) => s.addOnnxModel);
  const ctx = parseContextLength(context);

  useEffect(() => () => model?.m.policy.dispose(), [model]);

  async function load(e: FormEvent): Promise<void> {
    e.preventDefault();
    const mf = modelInput.current?.files?.[0];
    const tf = tokInput.current?.files?.[0];
    if (!mf || !tf) {
      setError(`Pick ${!mf ? 'the model file (.onnx)' : 'its tokenizer file (.json)'} first.`);
      return;
    }
    if ('error' in ctx) return;
    setLoading(true);
    setError(null);
    setModel(null); // the previous model is released (effect cleanup)
    try {
      const { bytes, tokenizerText, ...m } = await importUserModel(mf, tf, ep, ctx.value);
      setModel({ m, ep, file: mf.name });
      const ref = await referenceRef(mf.name, bytes);
      addOnnxModel({ name: mf.name, bytes, tokenizerText, contextLength: m.policy.config.contextLength, vocabSize: m.info.vocabSize, ref });
    } catch (err) {
      setError(errorText(err));
    } finally {
      setLoading(false);
      setAttempts((n) => n + 1);
    }
  }

  return (
    <section
      className="onnx-import"
      aria-label="Import ONNX model"
      data-testid="onnx-import"
      data-state={loading ? 'loading' : error ? 'error' : model ? 'loaded' : 'idle'}
      data-attempts={attempts}
    >
      <h3>Import ONNX model</h3>
      <p className="hint">
        A causal LM (input_ids → logits; attention_mask, position_ids, KV cache and values optional) with its tokenizer file, run in
        onnxruntime-web and kept in memory while this page is open.
      </p>
      <form className="form-grid" onSubmit={(e) => void load(e)}>
        <label htmlFor={`${id}-m`}>Model (.onnx)</label>
        <input id={`${id}-m`} ref={modelInput} type="file" accept=".onnx,application/octet-stream" data-testid="onnx-import-model" />
        <label htmlFor={`${id}-t`}>Tokenizer (.json)</label>
        <input id={`${id}-t`} ref={tokInput} type="file" accept=".json,application/json" data-testid="onnx-import-tokenizer" />
        <label htmlFor={`${id}-c`}>Context</label>
        <input
          id={`${id}-c`}
          className="ckpt-seed"
          value={context}
          placeholder="from metadata"
          onChange={(e) => setContext(e.target.value)}
          aria-invalid={'error' in ctx}
          data-testid="onnx-import-context"
        />
        <label htmlFor={`${id}-ep`}>Run on</label>
        <select id={`${id}-ep`} value={ep} onChange={(e) => setEp(e.target.value as BrowserEp)} data-testid="onnx-import-ep">
          {hasWebGpu && <option value="webgpu">ORT webgpu</option>}
          <option value="wasm">ORT wasm</option>
        </select>
        <button type="submit" disabled={loading || 'error' in ctx} data-testid="onnx-import-load">
          {loading ? 'Loading…' : 'Load model'}
        </button>
      </form>
      {'error' in ctx && <p className="field-error bad">{ctx.error}</p>}
      {error && (
        <div className="alert" role="alert" data-testid="onnx-import-error">
          {error}
        </div>
      )}
      {model && <Generate key={model.file + model.ep} model={model.m} ep={model.ep} file={model.file} />}
    </section>
  );
}

function Generate({ model, ep, file }: { model: ImportedModel; ep: BrowserEp; file: string }) {
  const id = useId();
  const [prompt, setPrompt] = useState('function add(a, b) {\n  return');
  const [maxNew, setMaxNew] = useState('24');
  const [busy, setBusy] = useState(false);
  const [out, setOut] = useState<Sample | { error: string } | null>(null);
  const info = model.info;
  const n = Number(maxNew);
  const nOk = Number.isInteger(n) && n >= 1;

  async function run(e: FormEvent): Promise<void> {
    e.preventDefault();
    if (!nOk) return;
    setBusy(true);
    setOut(null);
    try {
      setOut(await sampleFrom(model, prompt, { maxNewTokens: n, temperature: 0, seed: 1 }));
    } catch (err) {
      setOut({ error: errorText(err) });
    } finally {
      setBusy(false);
    }
  }

  return (
    <div data-testid="onnx-loaded">
      <p className="hint" data-testid="onnx-import-summary">
        Loaded {file} on ORT {ep}: vocabulary {info.vocabSize}, context {model.policy.config.contextLength}
        {info.kv ? `, KV cache (${info.kv.layers} layers)` : ', no KV cache'}
        {info.hasValues ? ', value head' : ''}
        {info.producer ? `; produced by ${info.producer}` : ''}. The Evaluate panel offers it as “ONNX: {file}”, and the Experiment panel as
        a KL reference.
      </p>
      <form onSubmit={(e) => void run(e)}>
        <label htmlFor={`${id}-p`}>Prompt</label>
        <textarea id={`${id}-p`} rows={3} cols={60} value={prompt} onChange={(e) => setPrompt(e.target.value)} data-testid="onnx-prompt" />
        <div className="ckpt-row">
          <label htmlFor={`${id}-n`}>New tokens</label>
          <input id={`${id}-n`} className="ckpt-seed" value={maxNew} onChange={(e) => setMaxNew(e.target.value)} aria-invalid={!nOk} />
          <button type="submit" disabled={busy || !nOk} data-testid="onnx-generate">
            {busy ? 'Generating…' : 'Generate (greedy)'}
          </button>
        </div>
      </form>
      {out && 'error' in out && (
        <div className="alert" role="alert" data-testid="onnx-generate-error">
          {out.error}
        </div>
      )}
      {out && 'text' in out && (
        <div data-testid="onnx-sample" data-tokens={out.tokens}>
          <pre className="onnx-sample">
            <span className="hint">{prompt}</span>
            <strong data-testid="onnx-sample-text">{out.text}</strong>
          </pre>
          <p className="hint">
            {out.tokens} tokens ({out.finish}) in {out.ms.toFixed(0)} ms
          </p>
        </div>
      )}
    </div>
  );
}
