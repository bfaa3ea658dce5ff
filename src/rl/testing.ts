/**
 * Test support: preset overrides for a miniature pipeline run (one task family, a 1-layer
 * model, a few steps of each stage, no reward model): seconds on the cpu backend, a minute or
 * two on SwiftShader. Its RL is PPO with a critic, a KL penalty and a reward-model term (the
 * `tiny` preset's own RL is Dr. GRPO without them), so the tests go through every part of it.
 * Tests that need more merge their own fields over it.
 */
export const MINI_RUN = {
  model: { nLayer: 1, dModel: 32, nHead: 2, contextLength: 96, vocabSize: 320 },
  tasks: { families: ['spec'], heldoutShare: 0.1, rlShare: 0.1 },
  sft: { maxSteps: 4, evalEvery: 2, batch: 8 },
  rm: { enabled: false, weight: 0.1 },
  rl: {
    algo: 'ppo',
    groupStd: true,
    kl: { coef: 0.02 },
    iterations: 1,
    promptsPerIteration: 2,
    samplesPerPrompt: 2,
    maxNewTokens: 10,
    minibatch: 4,
    epochs: 1,
    evalEvery: 1,
  },
  eval: { samples: 1, k: [1], maxNewTokens: 10 },
};
