# Sourced by scripts/lora-table.sh and scripts/rm-table.sh: the tiny preset's lab run for a seed
# and its SFT checkpoint exported as a GPT-2 folder, the imported model both tables start from.
# tiny_hf OUT SEED [SET]: `coderl train --preset tiny --seed SEED --out OUT/tiny-SEED` (with --set
# SET when given: rm-table.sh passes rl.iterations 0, lora-table.sh keeps the full fine-tuning RL
# as its baseline), then `coderl export-hf` of its sft.ckpt to OUT/tiny-SEED/hf; the log is
# OUT/tiny-SEED.log. Skipped when that folder already holds a model.
tiny_hf() {
  local out=$1 seed=$2 set=${3:-}
  [ -f "$out/tiny-$seed/hf/config.json" ] && return 0
  node bin/coderl.mjs train --preset tiny --seed "$seed" --out "$out/tiny-$seed" ${set:+--set "$set"} --quiet > "$out/tiny-$seed.log" 2>&1 &&
    node bin/coderl.mjs export-hf --checkpoint "$out/tiny-$seed/sft.ckpt" --out "$out/tiny-$seed/hf" >> "$out/tiny-$seed.log"
}
