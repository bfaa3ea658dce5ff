// PPO / GRPO loss derivatives per token, and the loss statistics summed over the tokens.
// float64 reference: rlTokenGradsRef in src/kernels/ppo_loss_ref.ts (the cpu backend runs it).
// Shape legend: N tokens (B * T rows); S plane stride in floats (S >= N; planes of one buffer
// start at multiples of the storage offset alignment, so other kernels can bind them as ranges).
// Per token i with mask weight w (w == 0: every output 0 and no statistic):
//   ratio  = exp(logp - oldLogp)
//   policy = max(-A ratio, -A clip(ratio, 1 - clip, 1 + clip))
//            d/dlogp = -A ratio unless the clipped term is strictly larger (then 0)
//   value  = 0.5 max((v - R)^2, (oldV + clip(v - oldV, -vclip, vclip) - R)^2)   (vclip 0: 0.5 (v - R)^2;
//            vfCoef 0: no value loss). d/dv: the chosen branch's residual; 0 when the clip is active
//   kl     = exp(d) - d - 1, d = ref - logp (k3; klCoef > 0 only);  d/dlogp = 1 - exp(d)
//   dlogp[i]    = w scale (dpolicy + klCoef dkl)
//   dentropy[i] = -w scale entCoef
//   dvalue[i]   = w scale vfCoef dvalue
// Statistics, unscaled and accumulated into sums (order of RL_STAT_FIELDS in ppo_loss_ref.ts):
//   w policy, w value, w entropy, w kl, w ((ratio - 1) - log ratio), w [|ratio - 1| > clip]
// One workgroup: invocations stride over the N tokens, then reduce their partial statistics in
// workgroup memory in a fixed order (the result is deterministic) and invocation 0 adds them to
// sums, so successive micro-batches accumulate without a second kernel or temporaries. The work
// is O(N) beside the O(N V) of the log-prob kernels around it. WG_X must be a power of two.

struct Params {
  n: u32,         // N
  stride: u32,    // S
  clip: f32,      // PPO ratio clip epsilon
  vclip: f32,     // value clip around the old value; 0 = unclipped
  vfCoef: f32,
  entCoef: f32,
  klCoef: f32,
  scale: f32,     // 1 / (masked tokens of the whole optimizer step)
}

const STATS: u32 = 6u;
// planes of `rollout`
const OLD_LOGP: u32 = 0u;
const OLD_VALUE: u32 = 1u;
const ADVANTAGE: u32 = 2u;
const RETURN: u32 = 3u;
const REF_LOGP: u32 = 4u;
// planes of `dtok`
const DLOGP: u32 = 0u;
const DENTROPY: u32 = 1u;

@group(0) @binding(0) var<storage, read> logp: array<f32>;          // (N) from logprob_forward
@group(0) @binding(1) var<storage, read> entropy: array<f32>;       // (N) from logprob_forward
@group(0) @binding(2) var<storage, read> values: array<f32>;        // (N) value head
@group(0) @binding(3) var<storage, read> mask: array<f32>;          // (N) loss weights
@group(0) @binding(4) var<storage, read> rollout: array<f32>;       // (5, S) oldLogp, oldValues, advantages, returns, refLogp
@group(0) @binding(5) var<storage, read_write> dtok: array<f32>;    // (2, S) dlogp, dentropy; written
@group(0) @binding(6) var<storage, read_write> dvalue: array<f32>;  // (N) written
@group(0) @binding(7) var<storage, read_write> sums: array<f32>;    // (6) accumulated
@group(0) @binding(8) var<uniform> params: Params;

override WG_X: u32 = 256;

var<workgroup> partial: array<array<f32, STATS>, WG_X>;  // (WG_X, 6)

// exp(x) - 1 - x without the cancellation of the direct formula near 0 (Taylor series to x^8
// below |x| = 0.5: truncation < 6e-9 relative; above, the direct formula loses < 2e-6 relative).
fn expm1MinusX(x: f32) -> f32 {
  if (abs(x) < 0.5) {
    return x * x * (1.0 / 2.0 + x * (1.0 / 6.0 + x * (1.0 / 24.0 + x * (1.0 / 120.0 + x * (1.0 / 720.0
      + x * (1.0 / 5040.0 + x * (1.0 / 40320.0)))))));
  }
  return (exp(x) - 1.0) - x;
}

@compute @workgroup_size(WG_X)
fn main(@builtin(local_invocation_index) lid: u32) {
  let n = params.n;
  let S = params.stride;
  let eps = params.clip;
  var acc = array<f32, STATS>(0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
  for (var i = lid; i < n; i += WG_X) {
    let w = mask[i];
    if (w == 0.0) {
      dtok[DLOGP * S + i] = 0.0;
      dtok[DENTROPY * S + i] = 0.0;
      dvalue[i] = 0.0;
      continue;
    }
    let lp = logp[i];
    let A = rollout[ADVANTAGE * S + i];
    let logRatio = lp - rollout[OLD_LOGP * S + i];
    let ratio = exp(logRatio);
    let t1 = -A * ratio;
    let t2 = -A * clamp(ratio, 1.0 - eps, 1.0 + eps);
    var dlp = select(0.0, t1, t1 >= t2);
    let policy = max(t1, t2);

    // value loss
    var valueLoss = 0.0;
    var dv = 0.0;
    if (params.vfCoef > 0.0) {
      let v = values[i];
      let R = rollout[RETURN * S + i];
      let du = v - R;
      valueLoss = 0.5 * du * du;
      dv = du;
      if (params.vclip > 0.0) {
        let oldV = rollout[OLD_VALUE * S + i];
        let delta = v - oldV;
        let dc = (oldV + clamp(delta, -params.vclip, params.vclip)) - R;
        if (du * du < dc * dc) {
          valueLoss = 0.5 * dc * dc;
          dv = select(0.0, dc, abs(delta) < params.vclip);
        }
      }
    }

    // k3 KL to the reference (GRPO): exp(d) - 1 = expm1MinusX(d) + d keeps 1 - exp(d) accurate
    var kl = 0.0;
    if (params.klCoef > 0.0) {
      let d = rollout[REF_LOGP * S + i] - lp;
      kl = expm1MinusX(d);
      dlp -= params.klCoef * (kl + d);
    }

    let ws = w * params.scale;
    dtok[DLOGP * S + i] = ws * dlp;
    dtok[DENTROPY * S + i] = ws * -params.entCoef;
    dvalue[i] = ws * params.vfCoef * dv;

    acc[0] += w * policy;
    acc[1] += w * valueLoss;
    acc[2] += w * entropy[i];
    acc[3] += w * kl;
    acc[4] += w * expm1MinusX(logRatio);
    acc[5] += select(0.0, w, abs(ratio - 1.0) > eps);
  }

  partial[lid] = acc;
  workgroupBarrier();
  for (var gap = WG_X / 2u; gap > 0u; gap = gap / 2u) {
    if (lid < gap) {
      for (var k = 0u; k < STATS; k++) {
        partial[lid][k] += partial[lid + gap][k];
      }
    }
    workgroupBarrier();
  }
  if (lid == 0u) {
    for (var k = 0u; k < STATS; k++) {
      sums[k] += partial[0][k];
    }
  }
}
