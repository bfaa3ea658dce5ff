/**
 * Monaco for the rollout views (RolloutView, RolloutCompare) and the scratch scorer: loaded lazily
 * once per page, with the TypeScript service's JavaScript diagnostics (syntax, semantic and
 * suggestions such as "'x' is declared but its value is never read"), hovers, code actions and
 * inlay hints off: tree-sitter's 'ast' markers and the lint findings are the lab's diagnostics,
 * a rollout token's hover is its numbers, and a diff is no place for squiggles.
 */
export type MonacoApi = (typeof import('../monaco'))['monaco'];

let monacoLoad: Promise<MonacoApi> | null = null;

export function loadRolloutMonaco(): Promise<MonacoApi> {
  monacoLoad ??= import('../monaco').then(({ monaco }) => {
    const js = monaco.typescript.javascriptDefaults;
    js.setDiagnosticsOptions({
      ...js.getDiagnosticsOptions(),
      noSyntaxValidation: true,
      noSemanticValidation: true,
      noSuggestionDiagnostics: true,
    });
    js.setModeConfiguration({ ...js.modeConfiguration, diagnostics: false, hovers: false, codeActions: false, inlayHints: false });
    return monaco;
  });
  monacoLoad.catch(() => (monacoLoad = null));
  return monacoLoad;
}
