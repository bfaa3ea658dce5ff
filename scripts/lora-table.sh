#!/usr/bin/env bash
# The README's LoRA learning table: for each seed, the tiny preset's lab run (SFT, then full
# fine-tuning RL: the baseline), its SFT checkpoint exported as a GPT-2 folder, and GRPO with
# LoRA rank 8 and 16 from that folder (the same tasks, seeds and RL settings; only the trainable
# parameters and the learning rate differ). Runs two at a time; each run's summary.json is read by
# scripts/lora-table.mjs. Usage: scripts/lora-table.sh OUT [SEEDS...] (default seeds 1 2 3).
set -euo pipefail
out=${1:-runs/lora-table}; shift || true
seeds=("${@:-1 2 3}"); [ $# -eq 0 ] && seeds=(1 2 3)
coderl="node bin/coderl.mjs"
. "$(dirname "$0")/lib/tiny-hf.sh"
# The defaults are the README table's settings: LoRA+ (lora_B at LORA_RATIO x the rate, PEFT's
# loraplus_lr_ratio) with ratio 4, on every linear module and the output layer (lm_head), at lr
# 5e-4 (docs/results.md has the variants tried before: plain LoRA at 1e-3, without lm_head).
# LORA_LR, LORA_RATIO (1: plain LoRA), LORA_TARGETS (comma-separated HF module names),
# LORA_RANKS (default "8 16") and LORA_JOBS (runs at once, default 2) override them
lr=${LORA_LR:-5e-4}; ratio=${LORA_RATIO:-4}; jobs=${LORA_JOBS:-2}
read -r -a ranks <<< "${LORA_RANKS:-8 16}"
targets=$(echo "${LORA_TARGETS:-c_attn,c_proj,c_fc,lm_head}" | sed 's/[^,][^,]*/"&"/g')
lora_set() { echo "{\"lora\":{\"rank\":$1,\"targets\":[$targets],\"lrRatio\":$ratio},\"rl\":{\"lr\":$lr}}"; }
mkdir -p "$out"
lora() { $coderl train --preset tiny --seed "$1" --out "$out/lora$2-$1" --model "$out/tiny-$1/hf" --set "$(lora_set "$2")" --quiet > "$out/lora$2-$1.log" 2>&1; }
for s in "${seeds[@]}"; do tiny_hf "$out" "$s" & done; wait
pids=()
for s in "${seeds[@]}"; do for r in "${ranks[@]}"; do
  lora "$s" "$r" & pids+=($!)
  if [ ${#pids[@]} -ge "$jobs" ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
done; done
wait
echo "done: $out"
