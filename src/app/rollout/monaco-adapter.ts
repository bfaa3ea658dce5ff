/**
 * Monaco behind one small adapter for the rollout view (panels/RolloutView.tsx), on the pattern of
 * Monaco's own diagnostics adapter (the TypeScript language's DiagnosticsAdapter): character
 * offsets become positions with `model.getPositionAt`, each source of markers has its own owner
 * and the owners' markers are cleared when the editor is disposed, and nothing touches a model
 * that is disposed (results the view awaited can land after the editor is gone).
 *
 * Pure parts, no Monaco at run time (monaco-adapter.test.ts runs them on a plain text model):
 *   offsetRange      offsets -> a range
 *   heatItems        the heatmap's items: one per token, or per group of tokens sharing a range
 *   heatDecoration   an item's decoration: its colour class and its hover (markdown, tokens.ts)
 *   diagnosisMarkers a diagnosis (analysis + tests) -> the markers of each owner
 *   markerCounts     how many markers each owner gets
 * The editor part, RolloutEditor: one model and editor per record, a decorations collection per
 * overlay layer (the dimmed prompt, the heat), markers per owner, reveal and reset.
 */
import type * as M from 'monaco-editor';
import type { AnalysisResult } from '../../analysis';
import type { RolloutRecord } from '../../rl/ppo-loop';
import type { TestResult } from '../../sandbox/result';
import type { MonacoApi } from './monaco';
import {
  alignTokens,
  heatBucket,
  heatClass,
  mean,
  scaleValue,
  testLine,
  tokenHover,
  tokenInfo,
  type HeatScale,
  type TokenSpan,
} from './tokens';

// ---------------------------------------------------------------------------------------------
// Offsets -> ranges

/** The part of a text model offsets are converted with. */
export type PositionModel = Pick<M.editor.ITextModel, 'getPositionAt'>;
/** The part of a text model the markers are placed with. */
export type MarkerModel = PositionModel &
  Pick<M.editor.ITextModel, 'getLineCount' | 'getLineFirstNonWhitespaceColumn' | 'getLineMaxColumn'>;

/** The range of the characters [start, end) of the model (offsets past the end clamp to it, as getPositionAt does). */
export function offsetRange(model: PositionModel, start: number, end: number): M.IRange {
  const a = model.getPositionAt(Math.min(start, end));
  const b = model.getPositionAt(Math.max(start, end));
  return { startLineNumber: a.lineNumber, startColumn: a.column, endLineNumber: b.lineNumber, endColumn: b.column };
}

// ---------------------------------------------------------------------------------------------
// The heat layer: one decoration per token (per group of tokens sharing a range)

export interface HeatItem {
  /** token indices (several for an `approx` group) */
  tokens: number[];
  kind: TokenSpan['kind'];
  /** editor offsets when the editor shows the recorded program */
  start: number;
  end: number;
  /** the recorded text of the range: the decoration is dropped once it changes */
  text: string;
}

/** The heat items of record `r` shown as `prompt + completion`, and whether the token texts matched exactly. */
export function heatItems(r: Pick<RolloutRecord, 'tokens'>, prompt: string, completion: string): { items: HeatItem[]; exact: boolean } {
  const { spans, exact } = alignTokens(r.tokens, completion, prompt.length);
  const program = prompt + completion;
  const items: HeatItem[] = [];
  spans.forEach((s, i) => {
    if (s.group !== i) items[items.length - 1]!.tokens.push(i);
    else items.push({ tokens: [i], kind: s.kind, start: s.start, end: s.end, text: program.slice(s.start, s.end) });
  });
  return { items, exact };
}

/** Monaco's TrackedRangeStickiness.NeverGrowsWhenTypingAtEdges: typing at a token's edge does not colour the new text. */
const NEVER_GROWS = 1 satisfies M.editor.TrackedRangeStickiness;

/** Item `it`'s decoration under `scale`: `edited` says the completion has been edited elsewhere (a note in the hover). */
export function heatDecoration(it: HeatItem, r: RolloutRecord, scale: HeatScale, edited: boolean): M.editor.IModelDecorationOptions {
  const v = mean(it.tokens.map((i) => scaleValue(r, scale, i) ?? NaN));
  const cls = `heat-tok ${heatClass(scale, heatBucket(scale, v))}`;
  const notes = [
    it.kind === 'approx' ? `${it.tokens.length} tokens share this range: their texts split a character's bytes` : '',
    it.kind === 'extra' ? 'past the end of the completion (the EOS token)' : '',
    edited ? 'recorded token: the completion has been edited elsewhere' : '',
  ].filter(Boolean);
  const hoverMessage: M.IMarkdownString[] = it.tokens.map((i) => ({ value: tokenHover(tokenInfo(r, i), notes.join('; ') || undefined) }));
  const base = { stickiness: NEVER_GROWS, hoverMessage };
  if (it.start < it.end) return { ...base, inlineClassName: cls };
  return { ...base, showIfCollapsed: true, after: { content: r.tokens[it.tokens[0]!] || 'EOS', inlineClassName: `${cls} heat-extra` } };
}

// ---------------------------------------------------------------------------------------------
// Markers: analysis offsets are completion offsets; the editor's are prompt.length further

/** The owners of the view's markers: syntax errors (tree-sitter), lint findings, failing tests. */
export const MARKER_OWNERS = ['ast', 'lint', 'tests'] as const;
export type MarkerOwner = (typeof MARKER_OWNERS)[number];
export type MarkerCounts = Record<MarkerOwner, number>;

/** What the markers show: the analysis of the completion and its tests' results. */
export interface Diagnosis {
  analysis: AnalysisResult | null;
  tests: TestResult[];
}

/** Monaco's MarkerSeverity values, by finding severity (the rollout view's markers and the scratch scorer's). */
export const SEVERITY = {
  error: 8 satisfies M.MarkerSeverity,
  warning: 4 satisfies M.MarkerSeverity,
  info: 2 satisfies M.MarkerSeverity,
} as const;

/**
 * The markers of each owner for `d`, in a model holding `prompt + completion`: syntax errors and
 * lint findings at their ranges, each failing test on its line (testLine: where it failed, else
 * the function header of `entryPoint`), clamped to the model's lines.
 */
export function diagnosisMarkers(
  model: MarkerModel,
  d: Diagnosis,
  prompt: string,
  entryPoint: string | undefined,
): Record<MarkerOwner, M.editor.IMarkerData[]> {
  const at = (start: number, end: number) => offsetRange(model, prompt.length + start, prompt.length + end);
  const ast = (d.analysis?.ast.errors ?? []).map((e) => ({
    ...at(e.start, e.end),
    severity: SEVERITY.error,
    message: e.message,
    source: 'tree-sitter',
    code: e.kind === 'ERROR' ? 'syntax/error' : 'syntax/missing',
  }));
  const lint = (d.analysis?.diagnostics ?? [])
    .filter((f) => f.source !== 'ast')
    .map((f) => ({ ...at(f.start, f.end), severity: SEVERITY[f.severity], message: f.message, source: f.source, code: f.ruleId }));
  const lines = model.getLineCount();
  const tests = d.tests
    .filter((t) => t.status !== 'passed')
    .map((t) => {
      const { line: l, known } = testLine(t, prompt, entryPoint);
      const line = Math.min(Math.max(l, 1), lines);
      const where = known ? '' : ' (shown at the function header: the failure is in the test code)';
      return {
        startLineNumber: line,
        startColumn: model.getLineFirstNonWhitespaceColumn(line) || 1,
        endLineNumber: line,
        endColumn: model.getLineMaxColumn(line),
        severity: SEVERITY.error,
        message: `${t.name} ${t.status}: ${t.message ?? t.source}${where}`,
        source: 'tests',
        code: t.name,
      };
    });
  return { ast, lint, tests };
}

/** How many markers each owner gets for `d` (diagnosisMarkers' lengths, without a model); all 0 without a diagnosis. */
export function markerCounts(d: Diagnosis | null): MarkerCounts {
  if (!d) return { ast: 0, lint: 0, tests: 0 };
  return {
    ast: d.analysis?.ast.errors.length ?? 0,
    lint: (d.analysis?.diagnostics ?? []).filter((f) => f.source !== 'ast').length,
    tests: d.tests.filter((t) => t.status !== 'passed').length,
  };
}

// ---------------------------------------------------------------------------------------------
// The editor

/** The editor's overlay layers, one decorations collection each. */
export type OverlayLayer = 'prompt' | 'heat';

export interface RolloutEditorOptions {
  record: RolloutRecord;
  /** heatItems(record, record.prompt, record.completion).items */
  heat: HeatItem[];
  scale: HeatScale;
  ariaLabel: string;
  /** after every change of the text: the completion (null when the prompt part changed) and the heat decorations left */
  onEdit(text: string | null, heatLeft: number): void;
}

/**
 * The editor of one record: `prompt + completion` in a JavaScript model, the prompt dimmed, each
 * recorded token coloured under the heat scale with its numbers in the hover. A token whose text
 * is edited loses its colour. Every method is a no-op once the model is disposed.
 */
export class RolloutEditor {
  /** the prompt as the model holds it (Monaco normalises mixed line endings) */
  readonly prompt: string;
  /** the recorded completion as the model holds it */
  readonly original: string;
  private readonly monaco: MonacoApi;
  private readonly record: RolloutRecord;
  private readonly items: HeatItem[];
  private readonly editor: M.editor.IStandaloneCodeEditor;
  private readonly model: M.editor.ITextModel;
  private readonly layers: Record<OverlayLayer, M.editor.IEditorDecorationsCollection>;
  private readonly owners = new Set<string>();
  private readonly subscription: M.IDisposable;
  private scale: HeatScale;
  /** the items whose decorations are alive, in the heat collection's order */
  private live: HeatItem[] = [];
  /** the text has changed since the recorded program was painted */
  private edited = false;

  constructor(monaco: MonacoApi, host: HTMLElement, o: RolloutEditorOptions) {
    this.monaco = monaco;
    this.record = o.record;
    this.items = o.heat;
    this.scale = o.scale;
    const program = o.record.prompt + o.record.completion;
    this.model = monaco.editor.createModel(program, 'javascript');
    this.editor = monaco.editor.create(host, {
      model: this.model,
      ariaLabel: o.ariaLabel,
      automaticLayout: true,
      minimap: { enabled: false },
      fontSize: 13,
      scrollBeyondLastLine: false,
      theme: 'vs',
    });
    this.layers = { heat: this.editor.createDecorationsCollection(), prompt: this.editor.createDecorationsCollection() };
    const initial = this.model.getValue();
    // Monaco normalises mixed line endings; the prompt is then compared in the editor's form
    const p = initial === program ? o.record.prompt : o.record.prompt.replace(/\r\n|\r|\n/g, this.model.getEOL());
    this.prompt = p;
    this.original = initial.slice(p.length);
    this.paintRecorded();
    this.subscription = this.model.onDidChangeContent(() => {
      this.pruneHeat();
      const v = this.model.getValue();
      o.onEdit(v.startsWith(p) ? v.slice(p.length) : null, this.live.length);
    });
  }

  get disposed(): boolean {
    return this.model.isDisposed();
  }

  /** Heat decorations whose token still has its recorded text. */
  get heatLeft(): number {
    return this.live.length;
  }

  /** Recolours the surviving heat decorations where they are now. */
  setScale(scale: HeatScale): void {
    if (this.disposed) return;
    this.scale = scale;
    this.paintHeat(
      this.live,
      this.live.map((_, k) => this.layers.heat.getRange(k)!),
    );
  }

  setLanguage(language: string): void {
    if (!this.disposed) this.monaco.editor.setModelLanguage(this.model, language);
  }

  /** Replaces the markers of `owner` (cleared on dispose). */
  setMarkers(owner: string, markers: M.editor.IMarkerData[]): void {
    if (this.disposed) return;
    this.monaco.editor.setModelMarkers(this.model, owner, markers);
    this.owners.add(owner);
  }

  /** The markers of `d` under their owners (diagnosisMarkers); their counts, or null once disposed. */
  showDiagnosis(d: Diagnosis, entryPoint: string | undefined): MarkerCounts | null {
    if (this.disposed) return null;
    const byOwner = diagnosisMarkers(this.model, d, this.prompt, entryPoint);
    for (const owner of MARKER_OWNERS) this.setMarkers(owner, byOwner[owner]);
    return { ast: byOwner.ast.length, lint: byOwner.lint.length, tests: byOwner.tests.length };
  }

  /** Selects the characters [start, end) (clamped to the text), scrolls to them and focuses the editor. */
  reveal(start: number, end: number): void {
    if (this.disposed) return;
    const r = offsetRange(this.model, start, Math.min(end, this.model.getValueLength()));
    this.editor.setSelection(r);
    this.editor.revealRangeInCenterIfOutsideViewport(r);
    this.editor.focus();
  }

  /** Back to the recorded program in one undoable edit, both layers painted afresh; returns the heat decorations left (all). */
  reset(): number {
    if (this.disposed) return 0;
    // the edit collapses every decoration, so both layers are painted afresh
    this.editor.executeEdits('rollout-reset', [{ range: this.model.getFullModelRange(), text: this.prompt + this.original }]);
    this.paintRecorded();
    return this.live.length;
  }

  /** Clears every owner's markers, then disposes the editor and the model. */
  dispose(): void {
    if (this.disposed) return;
    this.subscription.dispose();
    for (const owner of this.owners) this.monaco.editor.setModelMarkers(this.model, owner, []);
    this.owners.clear();
    this.editor.dispose();
    this.model.dispose();
  }

  private range(start: number, end: number): M.IRange {
    return offsetRange(this.model, start, end);
  }

  /** The prompt's dimming and every token's heat, at the recorded program's offsets. */
  private paintRecorded(): void {
    this.layers.prompt.set([
      { range: this.range(0, this.prompt.length), options: { inlineClassName: 'rollout-prompt', stickiness: NEVER_GROWS } },
    ]);
    this.edited = false;
    this.paintHeat(
      this.items,
      this.items.map((it) => this.range(it.start, it.end)),
    );
  }

  private paintHeat(items: HeatItem[], ranges: M.IRange[]): void {
    this.layers.heat.set(items.map((it, k) => ({ range: ranges[k]!, options: heatDecoration(it, this.record, this.scale, this.edited) })));
    this.live = items;
  }

  /** Drops the decorations of tokens whose text changed (an EOS survives only at the very end). */
  private pruneHeat(): void {
    const items: HeatItem[] = [];
    const ranges: M.Range[] = [];
    const end = this.model.getValueLength();
    this.live.forEach((it, k) => {
      const range = this.layers.heat.getRange(k);
      if (!range) return;
      const same =
        it.start === it.end
          ? range.isEmpty() && this.model.getOffsetAt(range.getStartPosition()) === end
          : this.model.getValueInRange(range) === it.text;
      if (same) {
        items.push(it);
        ranges.push(range);
      }
    });
    if (items.length !== this.live.length || !this.edited) {
      this.edited = true;
      this.paintHeat(items, ranges);
    }
  }
}
