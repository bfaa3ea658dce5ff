/**
 * The Models panel's prompt box: a completion from the selected stored model, as `coderl
 * generate` makes it. The prompt goes through the model's chat template (format chat, or auto
 * when the model has one) or is continued as it is (completion); the sample is drawn in the model
 * worker, which keeps the model loaded for the next one (store/modelsSlice.ts sampleModel).
 */
import { useId, useState, type FormEvent } from 'react';
import { PROMPT_FORMATS, type PromptFormatSetting } from '../../rl/prompt-format';
import { useLab } from '../../store';
import { completeModels } from '../../store/modelsSlice';
import { autoBackend, type BackendChoice } from '../../store/worker-client';

const FORMAT_TEXT: Record<PromptFormatSetting, string> = {
  auto: 'auto (chat with a chat template)',
  chat: 'chat',
  completion: 'completion',
};

const duration = (ms: number): string => (ms < 1000 ? `${Math.max(1, Math.round(ms))} ms` : `${(ms / 1000).toFixed(2)} s`);

const int = (t: string, min: number): number | null => (/^\d+$/.test(t.trim()) && Number(t) >= min ? Number(t) : null);

export function PromptBox() {
  const id = useId();
  const items = useLab((s) => s.models.items);
  const selected = useLab((s) => s.models.selected);
  const select = useLab((s) => s.selectModel);
  const sampleModel = useLab((s) => s.sampleModel);
  const sampling = useLab((s) => s.models.sampling);
  const gpu = useLab((s) => s.gpu);
  const [prompt, setPrompt] = useState('function add(a, b) {');
  const [format, setFormat] = useState<PromptFormatSetting>('auto');
  const [backend, setBackend] = useState<BackendChoice>('auto');
  const [maxNew, setMaxNew] = useState('32');
  const [temperature, setTemperature] = useState('0.7');
  const [seed, setSeed] = useState('1');
  /** the prompt of the sample shown */
  const [sent, setSent] = useState('');
  const models = completeModels(items);
  const model = models.find((m) => m.id === selected) ?? null;
  if (!models.length) return null;

  const n = int(maxNew, 1);
  const t = Number(temperature);
  const tOk = temperature.trim() !== '' && t >= 0 && t <= 10;
  const s = int(seed, 0);
  const chat = model?.manifest.summary.chatTemplate ?? false;
  const formatOk = format !== 'chat' || chat;
  const ok = model !== null && n !== null && tOk && s !== null && formatOk && prompt.length > 0;

  function submit(e: FormEvent): void {
    e.preventDefault();
    if (!ok || sampling) return;
    setSent(prompt);
    void sampleModel({ prompt, format, maxNewTokens: n, temperature: t, seed: s }, backend);
  }

  return (
    <section className="models-prompt" aria-label="Prompt a stored model" data-testid="models-prompt">
      <h3>Prompt</h3>
      <form className="form-grid" onSubmit={submit}>
        <label htmlFor={`${id}-m`}>Model</label>
        <select id={`${id}-m`} value={selected ?? ''} onChange={(e) => select(e.target.value || null)} data-testid="models-prompt-model">
          {!model && <option value="">Choose a model…</option>}
          {models.map((m) => (
            <option key={m.id} value={m.id}>
              {m.manifest.name}
              {m.id !== m.manifest.name ? ` (${m.id})` : ''}
            </option>
          ))}
        </select>
        <label htmlFor={`${id}-p`}>Prompt</label>
        <textarea
          id={`${id}-p`}
          rows={3}
          value={prompt}
          onChange={(e) => setPrompt(e.target.value)}
          aria-invalid={prompt.length === 0}
          data-testid="models-prompt-text"
        />
        <label htmlFor={`${id}-f`}>Format</label>
        <select
          id={`${id}-f`}
          value={format}
          onChange={(e) => setFormat(e.target.value as PromptFormatSetting)}
          aria-invalid={!formatOk}
          data-testid="models-prompt-format"
        >
          {PROMPT_FORMATS.map((f) => (
            <option key={f} value={f} disabled={f === 'chat' && !chat}>
              {FORMAT_TEXT[f]}
              {f === 'chat' && !chat ? ' (no chat template)' : ''}
            </option>
          ))}
        </select>
        <label htmlFor={`${id}-b`}>Backend</label>
        <select
          id={`${id}-b`}
          value={backend}
          onChange={(e) => setBackend(e.target.value as BackendChoice)}
          data-testid="models-prompt-backend"
        >
          <option value="auto">auto: {autoBackend(gpu, 'sampling').backend} here</option>
          <option value="webgpu">webgpu (WGSL kernels)</option>
          <option value="cpu">cpu (float64, in a worker)</option>
        </select>
        <label htmlFor={`${id}-n`}>Max new tokens</label>
        <input
          id={`${id}-n`}
          className="ckpt-seed"
          value={maxNew}
          onChange={(e) => setMaxNew(e.target.value)}
          aria-invalid={n === null}
          data-testid="models-prompt-max"
        />
        <label htmlFor={`${id}-t`}>Temperature</label>
        <input
          id={`${id}-t`}
          className="ckpt-seed"
          value={temperature}
          onChange={(e) => setTemperature(e.target.value)}
          aria-invalid={!tOk}
          aria-describedby={`${id}-th`}
          data-testid="models-prompt-temperature"
        />
        <span id={`${id}-th`} className="hint models-field-hint">
          0 is greedy; up to 10
        </span>
        <label htmlFor={`${id}-s`}>Seed</label>
        <input
          id={`${id}-s`}
          className="ckpt-seed"
          value={seed}
          onChange={(e) => setSeed(e.target.value)}
          aria-invalid={s === null}
          data-testid="models-prompt-seed"
        />
        <button type="submit" className="primary" disabled={!ok || sampling} data-testid="models-generate">
          {sampling ? 'Generating…' : 'Generate'}
        </button>
      </form>
      <SessionLine />
      <SampleView prompt={sent} />
    </section>
  );
}

/** Where the model is loaded, or why it is not. */
function SessionLine() {
  const session = useLab((s) => s.models.session);
  if (!session || (session.status === 'error' && !session.note)) return null;
  if (session.status === 'opening')
    return (
      <p className="hint" role="status" data-testid="models-session">
        Loading {session.id} in the model worker ({session.backend} backend)…
      </p>
    );
  return (
    <p className="hint" data-testid="models-session" data-backend={session.backend} data-status={session.status}>
      {session.status === 'ready' && (
        <>
          {session.id} is loaded in the model worker on the {session.backend} backend (context {session.contextLength}) and stays loaded for
          the next prompt.{' '}
        </>
      )}
      {session.note && <span data-testid="models-session-note">{session.note}</span>}
    </p>
  );
}

function SampleView({ prompt }: { prompt: string }) {
  const sample = useLab((s) => s.models.sample);
  const error = useLab((s) => s.models.sampleError);
  if (error)
    return (
      <div className="alert" role="alert" data-testid="models-sample-error">
        {error}
      </div>
    );
  if (!sample) return null;
  return (
    <div data-testid="models-sample" data-tokens={sample.tokens} data-format={sample.format}>
      {sample.format === 'chat' ? (
        <pre className="models-sample">
          <span className="hint">The model&apos;s reply:{'\n'}</span>
          <strong data-testid="models-sample-text">{sample.text}</strong>
        </pre>
      ) : (
        <pre className="models-sample">
          <span className="hint">{prompt}</span>
          <strong data-testid="models-sample-text">{sample.text}</strong>
        </pre>
      )}
      <p className="hint" data-testid="models-sample-stats">
        {sample.tokens} token{sample.tokens === 1 ? '' : 's'} ({sample.finish}) in {duration(sample.ms)},{' '}
        <strong data-testid="models-tokens-per-s">{sample.tokensPerSecond.toFixed(1)} tokens/s</strong> on {sample.backend}; {sample.format}{' '}
        format, a prompt of {sample.promptTokens} tokens
      </p>
    </div>
  );
}
