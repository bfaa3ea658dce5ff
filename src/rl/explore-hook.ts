/**
 * The exploration switches that act through the sampler's `constrain` hook. (Syntax-constrained
 * sampling works by rejection and resampling in sample.ts; error-driven repair is a second turn
 * in ppo-loop.ts.) API-guided exploration: explore/api-bias.ts.
 */
import type { TextTokenizer } from '../tokenizer/types';
import type { ExploreConfig } from './config';
import { apiGuideConstrain, apiGuideMetrics, createApiGuide } from './explore/api-bias';
import type { SampleOptions } from './sample';

export interface ExploreHook {
  constrain: NonNullable<SampleOptions['constrain']>;
  /** the hook's counters since the last call (explore/api_* metrics), then reset */
  metrics(): Record<string, number>;
}

export function exploreHook(tok: TextTokenizer, cfg: ExploreConfig): ExploreHook | undefined {
  if (cfg.api === 'off') return undefined;
  const guide = createApiGuide(tok, { mode: cfg.api, strength: cfg.apiStrength });
  return {
    constrain: (promptTexts) => apiGuideConstrain(tok, promptTexts, guide),
    metrics() {
      const m = apiGuideMetrics(guide.stats);
      guide.resetStats();
      return m;
    },
  };
}
