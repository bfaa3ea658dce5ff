#!/usr/bin/env bash
# The reward model on an imported trunk (issue 17's "the seed's other two stages"): for each seed,
# the tiny preset's SFT checkpoint exported as a GPT-2 folder (made by scripts/lora-table.sh, or
# here when missing), then the reward-model stage alone on that folder: RM_SAMPLES samples per
# task of the imported policy, labelled by execution, Bradley-Terry on every within-task pair with
# different outcomes, RM_STEPS steps, a held-out share of tasks whose pairs it never trains on.
# Two reward models per seed: LoRA r8 on the frozen trunk, and the whole trunk fine-tuned. The
# defaults are the README table's: the likelihood score (SimPO's mean log-prob, beta 2), 16
# samples a task, early stopping on 20% of the training tasks. No RL (rl.iterations 0). Prints
# each run's held-out and train pairwise accuracy and the untrained likelihood's on the same pairs.
# Usage: scripts/rm-table.sh OUT [SEEDS...] (default seeds 1 2 3). Overrides: RM_SAMPLES (16),
# RM_STEPS (200), RM_HELDOUT (0.3), RM_LR (the whole trunk's rate, 1e-4), RM_LORA_LR (3e-4),
# RM_VAL (rm.valShare, 0.2; 0: no early stopping), RM_EVAL_EVERY (25), RM_SCORE (rm.score: value,
# likelihood or value+likelihood; likelihood), RM_BETA (rm.beta, 2), RM_LORA_TARGETS
# (c_attn,c_proj,c_fc,lm_head), RM_LORA_RATIO (lora.lrRatio, LoRA+; 1), RM_VARIANTS ("lora full").
# The earlier value-head table: RM_SCORE=value RM_BETA=1 RM_SAMPLES=8 RM_LR=1e-3 RM_LORA_LR=1e-3
# RM_VAL=0 RM_LORA_TARGETS=c_attn,c_proj,c_fc.
set -euo pipefail
out=${1:-runs/rm-table}; shift || true
seeds=("$@"); [ $# -eq 0 ] && seeds=(1 2 3)
coderl="node bin/coderl.mjs"
. "$(dirname "$0")/lib/tiny-hf.sh"
rm_set() { # $1: the rate, $2: what else the run sets
  echo "{\"rm\":{\"enabled\":true,\"samplesPerTask\":${RM_SAMPLES:-16},\"steps\":${RM_STEPS:-200},\"heldoutShare\":${RM_HELDOUT:-0.3},\"lr\":$1,\"valShare\":${RM_VAL:-0.2},\"evalEvery\":${RM_EVAL_EVERY:-25},\"score\":\"${RM_SCORE:-likelihood}\",\"beta\":${RM_BETA:-2}},\"rl\":{\"iterations\":0}$2}"
}
mkdir -p "$out"
rmrun() { $coderl train --preset tiny --seed "$1" --out "$out/rm-$2-$1" --model "$out/tiny-$1/hf" --set "$(rm_set "$3" "$4")" --quiet > "$out/rm-$2-$1.log" 2>&1; }
for s in "${seeds[@]}"; do tiny_hf "$out" "$s" '{"rl":{"iterations":0}}' & done; wait
pids=()
targets=$(echo "${RM_LORA_TARGETS:-c_attn,c_proj,c_fc,lm_head}" | sed 's/[^,][^,]*/"&"/g')
for s in "${seeds[@]}"; do for v in ${RM_VARIANTS:-lora full}; do
  if [ $v = lora ]; then lr=${RM_LORA_LR:-3e-4}; extra=",\"lora\":{\"rank\":8,\"targets\":[$targets],\"lrRatio\":${RM_LORA_RATIO:-1}}"
  else lr=${RM_LR:-1e-4}; extra=''; fi
  rmrun "$s" "$v" "$lr" "$extra" & pids+=($!)
  if [ ${#pids[@]} -ge 2 ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
done; done
wait
for f in "$out"/rm-*/rm.json; do
  node -e 'const j=require(process.argv[1]); const p=(x)=>(100*x).toFixed(1)+"%";
    console.log(process.argv[1].split("/").slice(-2)[0].padEnd(12), "held-out", p(j.heldoutAccuracy), "of", j.heldoutPairs, "pairs; train", p(j.trainAccuracy), "of", j.trainPairs,
      j.bestStep === undefined ? "" : "; step " + j.bestStep + " kept, validation " + p(j.valAccuracy) + " of " + j.valPairs,
      j.baselines ? "; untrained likelihood " + p(j.baselines.policyMeanLogp) : "")' "$PWD/$f"
done
