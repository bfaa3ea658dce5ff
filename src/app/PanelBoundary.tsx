/**
 * One failing panel never takes the page down: every panel's body renders inside this error
 * boundary. A render error shows what failed (the error's message, its stack under Details) with a
 * Retry that mounts the panel afresh; the other panels, the store and any run worker carry on,
 * since none of them lives in a panel's React tree.
 *
 * Fault drill: `coderlPanelFault('reward')` (devtools, or the e2e tests) makes that panel throw on
 * its next render, and `coderlPanelFault('reward', false)` stops it, so the path is tested for real.
 */
import { Component, useSyncExternalStore, type ReactNode } from 'react';

const faulty = new Set<string>();
const listeners = new Set<() => void>();

/** Makes panel `id` throw while rendering (or stops it); returns the panels now set to fail. */
export function setPanelFault(id: string, on = true): string[] {
  if (on) faulty.add(id);
  else faulty.delete(id);
  for (const l of listeners) l();
  return [...faulty];
}

if (typeof window !== 'undefined') (window as unknown as { coderlPanelFault: typeof setPanelFault }).coderlPanelFault = setPanelFault;

const subscribe = (l: () => void): (() => void) => {
  listeners.add(l);
  return () => listeners.delete(l);
};

/** Renders nothing, or throws when its panel is set to fail. */
function FaultProbe({ id }: { id: string }): null {
  const fail = useSyncExternalStore(subscribe, () => faulty.has(id));
  if (fail) throw new Error(`injected render fault in the ${id} panel (coderlPanelFault)`);
  return null;
}

interface State {
  error: Error | null;
  /** bumped by Retry: the children mount afresh */
  attempt: number;
}

export class PanelBoundary extends Component<{ id: string; title: string; children: ReactNode }, State> {
  override state: State = { error: null, attempt: 0 };

  static getDerivedStateFromError(error: unknown): Partial<State> {
    return { error: error instanceof Error ? error : new Error(String(error)) };
  }

  override componentDidCatch(error: unknown): void {
    console.error(`The ${this.props.title} panel failed:`, error);
  }

  private retry = (): void => this.setState((s) => ({ error: null, attempt: s.attempt + 1 }));

  override render(): ReactNode {
    const { error, attempt } = this.state;
    if (error) {
      return (
        <div className="panel-failed" role="alert" data-testid={`panel-error-${this.props.id}`}>
          <p>
            <strong>The {this.props.title} panel failed</strong>:{' '}
            <span data-testid="panel-error-message">{error.message || error.name}</span>
          </p>
          <p className="hint">The other panels, and any experiment that is running, carry on. Retry mounts this panel afresh.</p>
          {error.stack ? (
            <details>
              <summary>Details</summary>
              <pre>{error.stack.split('\n').slice(0, 8).join('\n')}</pre>
            </details>
          ) : null}
          <button type="button" onClick={this.retry} data-testid={`panel-retry-${this.props.id}`}>
            Retry
          </button>
        </div>
      );
    }
    return (
      <PanelAttempt key={attempt}>
        <FaultProbe id={this.props.id} />
        {this.props.children}
      </PanelAttempt>
    );
  }
}

function PanelAttempt({ children }: { children: ReactNode }): ReactNode {
  return children;
}
