/**
 * Test support: preset overrides for a miniature pipeline run (one task family, a 1-layer
 * model, a few steps of each stage, no reward model): seconds on the cpu backend, a minute or
 * two on SwiftShader. Tests that need more merge their own fields over it.
 */
export const MINI_RUN = {
  model: { nLayer: 1, dModel: 32, nHead: 2, contextLength: 96, vocabSize: 320 },
  tasks: { families: ['spec'], heldoutShare: 0.1, rlShare: 0.1 },
  sft: { maxSteps: 4, evalEvery: 2, batch: 8 },
  rm: { enabled: false },
  rl: { iterations: 1, promptsPerIteration: 2, samplesPerPrompt: 2, maxNewTokens: 10, minibatch: 4, epochs: 1, evalEvery: 1 },
  eval: { samples: 1, k: [1], maxNewTokens: 10 },
};
