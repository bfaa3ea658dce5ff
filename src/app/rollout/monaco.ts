/**
 * Monaco for the rollout views (RolloutView, RolloutCompare): loaded lazily once per page, with
 * the TypeScript service's JavaScript diagnostics off (tree-sitter's 'ast' markers are the syntax
 * check in the rollout view, and a diff is no place for squiggles).
 */
export type MonacoApi = (typeof import('../monaco'))['monaco'];

let monacoLoad: Promise<MonacoApi> | null = null;

export function loadRolloutMonaco(): Promise<MonacoApi> {
  monacoLoad ??= import('../monaco').then(({ monaco }) => {
    const js = monaco.typescript.javascriptDefaults;
    js.setDiagnosticsOptions({ ...js.getDiagnosticsOptions(), noSyntaxValidation: true, noSemanticValidation: true });
    return monaco;
  });
  monacoLoad.catch(() => (monacoLoad = null));
  return monacoLoad;
}
