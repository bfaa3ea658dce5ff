#!/usr/bin/env bash
# Runs our benchmarks on the GPU machine (no Node.js there), from the repo root, with what
# `node scripts/device-pack.mjs` put in .devrun/ (carried by the device call). README,
# "Reproducing on a real GPU". Writes $OUT/bench.log and one JSON file per benchmark.
#
#   OUT=/tmp/devout bash scripts/device-bench.sh
#
# Environment:
#   DEVICE_BENCH_LOCAL=1     simulate on a build machine: nothing is unpacked into / and
#                            ldconfig is not run (Dawn falls back to SwiftShader there)
#   DEVICE_BENCH_QUICK=1     small sizes (a few minutes on SwiftShader)
#   DEVICE_BENCH_DEADLINE=N  seconds the whole script may take (default 480); each step's
#                            timeout is cut so that the script ends by then, hung steps included
#   DEVICE_BANDWIDTH_GBS=N   the GPU's memory bandwidth for the decode bound of `bench models`
#                            (default 4800: H200, 4.8 TB/s)
#   DEVICE_PACK, DEVICE_WORK the packed folder (.devrun) and where it is unpacked (/tmp/devrun)
# A failing or timed-out step is logged and the next one runs.
set -u
OUT=${OUT:-/tmp/devout}
PACK=${DEVICE_PACK:-.devrun}
WORK=${DEVICE_WORK:-/tmp/devrun}
LOCAL=${DEVICE_BENCH_LOCAL:-0}
QUICK=${DEVICE_BENCH_QUICK:-0}
DEADLINE=${DEVICE_BENCH_DEADLINE:-480}
BANDWIDTH=${DEVICE_BANDWIDTH_GBS:-4800}
mkdir -p "$OUT"
PACK=$(cd "$PACK" 2>/dev/null && pwd) || { echo "no $PACK folder: run node scripts/device-pack.mjs and carry .devrun" | tee "$OUT/bench.log"; exit 1; }
START=$SECONDS

section() { echo; echo "=== $* ($((SECONDS - START)) s)"; }

# unxz SRC DST, with xz or, where xz is missing, Python's lzma
unxz_to() {
  if command -v xz >/dev/null 2>&1; then xz -dc "$1" >"$2"
  else python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$1" "$2"; fi
}

# step NAME LIMIT_S CMD...: runs CMD under timeout (cut to the time left), logs how it ended
step() {
  local name=$1 limit=$2; shift 2
  local left=$((DEADLINE - (SECONDS - START) - 5))
  ((limit > left)) && limit=$left
  section "$name (limit ${limit} s)"
  if ((limit < 5)); then echo "SKIPPED $name: no time left"; return 1; fi
  local t0=$SECONDS rc
  timeout -k 5 "$limit" "$@"
  rc=$?
  case $rc in
    0) echo "--- $name: ok in $((SECONDS - t0)) s" ;;
    124 | 137) echo "--- $name: TIMED OUT after $((SECONDS - t0)) s (rc $rc)" ;;
    *) echo "--- $name: FAILED rc $rc after $((SECONDS - t0)) s" ;;
  esac
  return $rc
}

# json_step NAME LIMIT FILE CMD...: like step, stdout to $OUT/FILE (and echoed into the log)
json_step() {
  local name=$1 limit=$2 file=$3; shift 3
  step "$name" "$limit" sh -c 'exec "$@" >"$0"' "$OUT/$file" "$@"
  local rc=$?
  [ -s "$OUT/$file" ] && { echo "--- $OUT/$file:"; cat "$OUT/$file"; echo; } || rm -f "$OUT/$file"
  return $rc
}

# Prints `coderl bench models --json` as one line per model and B, then SmolLM2-135M at B=32
# against the memory-bandwidth bound: bytes of weights read per decode step / bandwidth.
MODELS_SUMMARY='
const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
const mib = (b) => (b / 2 ** 20).toFixed(b < 2 ** 24 ? 2 : 0);
console.log("bench models on " + r.adapter + ": " + r.size + " shapes, prompt " + r.prompt_len + ", " + r.new_tokens + " new tokens");
for (const m of r.models)
  for (const e of m.engines) {
    if (e.error) console.log("  " + m.model + " " + e.engine + ": FAILED: " + e.error);
    else console.log("  " + m.model + " " + e.engine + ": load " + e.upload_ms + " ms + " + e.compile_ms + " ms compile");
    for (const x of e.rows)
      console.log("    B=" + String(x.B).padEnd(3) + " prefill " + String(x.prefill_tokens_per_s).padStart(8) + " tok/s  decode " +
        String(x.decode_tokens_per_s).padStart(8) + " tok/s  " + x.dispatches_per_step + " dispatches, " + x.submits_per_step +
        " submits a step  GPU " + mib(x.peak_bytes) + " MiB (weights " + mib(x.memory.weights) + ", KV " + mib(x.memory.kv_cache) +
        ", activations " + mib(x.memory.activations) + ")" + (x.bound ? "  bound " + x.bound.tokens_per_s + " tok/s, achieved " +
        (100 * x.bound.achieved).toFixed(1) + "%" : ""));
  }
const s = r.models.find((m) => m.model === "smollm2-135m");
const row = s && s.engines[0].rows.find((x) => x.B === 32);
if (row && row.bound) {
  const b = row.bound;
  console.log("SmolLM2-135M, B=32 decode: " + row.decode_tokens_per_s + " tok/s; weights read a step " + mib(b.weight_bytes_per_step) +
    " MiB / " + r.bandwidth_gb_s + " GB/s = " + (b.weight_bytes_per_step / (r.bandwidth_gb_s * 1e6)).toPrecision(3) + " ms a step, bound " +
    b.tokens_per_s + " tok/s (" + b.with_kv_tokens_per_s + " counting the KV cache read); achieved/bound = " + b.achieved +
    " (" + (100 * b.achieved).toFixed(1) + "%)");
} else console.log("SmolLM2-135M at B=32: no row (see above)");
'

# Prints `coderl bench train --json` as one line per shape and mode: the update step's tokens/s,
# ours and TF.js on this adapter, and the ratio against the 3x goal.
TRAIN_SUMMARY='
const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
console.log("bench train on " + r.adapter + ": " + r.size + " shapes, LoRA r=" + r.lora.rank + " on " + r.lora.targets.join(", "));
for (const x of r.rows) {
  const u = x.update;
  if (!u) { console.log("  " + x.model + " " + x.mode + ": FAILED: " + x.error); continue; }
  console.log("  " + x.model.padEnd(13) + x.mode.padEnd(5) + " B=" + u.B + " T=" + u.T + ": ours " + String(u.ours_tokens_per_s).padStart(8) +
    " tok/s (" + u.ours_ms + " ms), TF.js " + String(u.tfjs_tokens_per_s).padStart(8) + " tok/s (" + u.tfjs_ms + " ms), ours/TF.js " +
    u.ratio.toFixed(2) + "x" + (u.ratio >= 3 ? "" : " (under the 3x goal)"));
}
'

main() {
  section "device bench on $(uname -nsrm); local=$LOCAL quick=$QUICK deadline=${DEADLINE}s"
  cat "$PACK/MANIFEST.txt" 2>/dev/null || echo "no $PACK/MANIFEST.txt: run node scripts/device-pack.mjs and carry $PACK"
  command -v nvidia-smi >/dev/null 2>&1 && timeout 20 nvidia-smi

  section "Vulkan loader"
  echo "before:"; ldconfig -p 2>/dev/null | grep -i vulkan
  if [ "$LOCAL" != 1 ]; then
    # the device README's `.gl` recipe: the Vulkan loader and glvnd (the NVIDIA ICD,
    # libGLX_nvidia.so.0, fails to load without libGLdispatch even where a loader is present)
    if command -v dpkg >/dev/null 2>&1 && ls "$PACK"/gl/*.deb >/dev/null 2>&1; then
      for f in "$PACK"/gl/*.deb; do echo "dpkg -x $f /"; dpkg -x "$f" /; done
      ldconfig
    fi
    if ! ldconfig -p 2>/dev/null | grep -q 'libvulkan.so.1 '; then
      echo "no libvulkan.so.1 registered: using $PACK/lib through LD_LIBRARY_PATH"
      export LD_LIBRARY_PATH="$PACK/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    fi
    for icd in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json; do
      if [ -f "$icd" ]; then export VK_DRIVER_FILES=$icd; break; fi
    done
  else
    echo "DEVICE_BENCH_LOCAL=1: nothing unpacked into /, no ldconfig"
  fi
  echo "after:"; ldconfig -p 2>/dev/null | grep -i vulkan
  echo "VK_DRIVER_FILES=${VK_DRIVER_FILES:-} LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
  [ -n "${VK_DRIVER_FILES:-}" ] && cat "$VK_DRIVER_FILES"

  section "unpack $PACK -> $WORK"
  rm -rf "$WORK" && mkdir -p "$WORK/dist/linux-x64" "$WORK/compat" || return 1
  unxz_to "$PACK/node.xz" "$WORK/node" &&
    unxz_to "$PACK/cli.mjs.xz" "$WORK/cli.mjs" &&
    unxz_to "$PACK/bench-extra.mjs.xz" "$WORK/bench-extra.mjs" &&
    unxz_to "$PACK/dawn.node.xz" "$WORK/dist/linux-x64/dawn.node" || { echo "unpack FAILED"; return 1; }
  chmod +x "$WORK/node"
  (cd "$WORK" && sha256sum -c --quiet "$PACK/SHA256SUMS") && echo "sha256: ok"
  NODE=$WORK/node
  "$NODE" --version || { echo "node does not run here"; return 1; }
  if ! timeout 30 "$NODE" -e "require('$WORK/dist/linux-x64/dawn.node')"; then
    echo "dawn.node does not load; retrying with the packed libstdc++"
    unxz_to "$PACK/compat/libstdc++.so.6.xz" "$WORK/compat/libstdc++.so.6"
    export LD_LIBRARY_PATH="$WORK/compat${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    timeout 30 "$NODE" -e "require('$WORK/dist/linux-x64/dawn.node')" && echo "dawn.node loads with the packed libstdc++"
  fi
  export CODERL_BUNDLE=$WORK/cli.mjs NODE_OPTIONS=--enable-source-maps
  local cli=("$NODE" bin/coderl.mjs) extra=("$NODE" "$WORK/bench-extra.mjs")

  # The engine bench trains on one batch over and over and requires the last step's loss to be
  # within 1 of ln V; larger models memorise that batch fast (CPU reference, seed 1: small
  # B=16 T=128 loses about 0.15 per update, medium B=16 T=64 about 0.6), so the presets get many
  # tokens per step and few updates (warmup + steps - 1) before the last, checked loss.
  local sizes=256,512,1024,2048,4096 equick=()
  local small=(B=16 T=128 warmup=1 steps=5 genB=8 prompt=32 new=64) medium=(B=16 T=256 warmup=1 steps=2 genB=8 prompt=32 new=64)
  if [ "$QUICK" = 1 ]; then
    sizes=128,256 equick=(--quick) small=(B=1 T=16 warmup=1 steps=1 genB=1 prompt=4 new=4 genReps=1) medium=()
  fi

  if ! json_step "gpu-info" 60 gpu-info.json "${cli[@]}" gpu-info; then
    step "Vulkan loader diagnostics" 30 env VK_LOADER_DEBUG=error,warn,driver "${cli[@]}" gpu-info --skip-self-check --compact 2>&1 | tail -60
  fi
  json_step "bench runtime" 40 bench-runtime.json "${cli[@]}" bench runtime --json
  json_step "bench engine --sizes $sizes ${equick[*]}" 150 bench-engine.json "${cli[@]}" bench engine --sizes "$sizes" "${equick[@]}" --json &&
    timeout 20 "${extra[@]}" format "$OUT/bench-engine.json"
  # a preset run that fails other than by timing out (the loss check) is retried with steps=1
  json_step "engine, preset small: ${small[*]}" 70 bench-engine-small.json "${extra[@]}" preset=small "${small[@]}"
  rc=$?; ((rc && rc != 124 && rc != 137 && ${#small[@]})) &&
    json_step "engine, preset small, retry: ${small[*]} steps=1" 60 bench-engine-small.json "${extra[@]}" preset=small "${small[@]}" steps=1
  if ((${#medium[@]})); then
    json_step "engine, preset medium: ${medium[*]}" 90 bench-engine-medium.json "${extra[@]}" preset=medium "${medium[@]}"
    rc=$?; ((rc && rc != 124 && rc != 137)) &&
      json_step "engine, preset medium, retry: ${medium[*]} steps=1" 80 bench-engine-medium.json "${extra[@]}" preset=medium "${medium[@]}" steps=1
  fi
  # imported models at full size (SmolLM2-135M, Qwen2.5-0.5B, GPT-2 small shapes, random weights),
  # ours only: the device has no browser, so ORT's webgpu provider cannot run here (--ort none);
  # with the decode bound of every row at $BANDWIDTH GB/s (weights read once a step)
  local models=(--batches 1,8,32)
  [ "$QUICK" = 1 ] && models=(--tiny --models smollm2-135m --batches 2,32)
  json_step "bench models ${models[*]} (ours only, bound at $BANDWIDTH GB/s)" 170 bench-models.json \
    "${cli[@]}" bench models --ort none "${models[@]}" --bandwidth "$BANDWIDTH" --json &&
    timeout 20 "$NODE" -e "$MODELS_SUMMARY" "$OUT/bench-models.json"
  # training the imported shapes (SmolLM2-135M, Qwen2.5-0.5B; LoRA r8 on an f32 and on a BF16
  # base, and full): our update step against the same step in TF.js on this adapter. --update-only:
  # the GRPO iteration scores in the sandbox pool with the analyzer, whose worker bundle and wasm
  # files the pack does not carry
  local train=()
  [ "$QUICK" = 1 ] && train=(--tiny)
  json_step "bench train --update-only ${train[*]}" 260 bench-train.json "${cli[@]}" bench train --update-only --modes lora,lora-bf16,full "${train[@]}" --json &&
    timeout 20 "$NODE" -e "$TRAIN_SUMMARY" "$OUT/bench-train.json"
  command -v nvidia-smi >/dev/null 2>&1 && timeout 20 nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw,memory.used --format=csv
  section "done; files in $OUT:"
  ls -la "$OUT"
}

main 2>&1 | tee "$OUT/bench.log"
