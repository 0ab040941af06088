#!/usr/bin/env bash
# Proves the cuda backend on a machine with an NVIDIA GPU, in one run of under 15 minutes:
#   1. build   builds mcc and mcc_gpu_tests with CUDA (scripts/build.sh) unless both binaries exist
#   2. suite   the gpu test suite: `ctest -L gpu` in a ctest tree (mcc_gpu_tests and the ```sh gpu
#              examples of the docs), else mcc_gpu_tests and tests/docs/doc_examples.py --gpu directly
#   3. agree   each model on cuda against the same model on the cpu (batch 1, fp32 and fp16), and the
#              fp32 golden models against their ONNX Runtime outputs on cuda
#   4. bench   `mcc bench --backend cuda` against `mcc bench --backend cpu` and ONNX Runtime (its
#              CUDAExecutionProvider when onnxruntime-gpu is installed, else its CPU provider, said
#              loudly), at batch 1 and 32 (where the batch dim is free) in fp32 and fp16, with the
#              measured host<->device transfers per run; then a markdown table
# Models: MNIST and YOLOX-nano from golden/, MobileNetV2 from MODELS_DIR, MiniLM-L6 and SmolLM2-135M
# when their .onnx files are found (reported skipped otherwise). fp16 models are made here by
# `mcc convert -p 'fold,fp16{keep_io=true}'`; batch-32 copies by scripts/gpu_check.py batchable.
#
# Environment:
#   MCC_BUILD_DIR          build tree (default build/)
#   MCC_BIN                mcc binary (default $MCC_BUILD_DIR/mcc)
#   MCC_GPU_TESTS_BIN      gpu test binary (default $MCC_BUILD_DIR/mcc_gpu_tests)
#   MODELS_DIR             where mobilenet_v2_random_bn_opset13.onnx, minilm_l6_v2.onnx and
#                          smollm2_135m.onnx are looked for first (default ../shared/models)
#   GPU_CHECK_OUT          folder of gpu_check.log, gpu_check.md and gpu_check.tsv
#                          (default $MCC_BUILD_DIR/gpu_check)
#   GPU_CHECK_BUDGET_S     seconds after which the remaining benchmarks are skipped (default 780)
#   GPU_CHECK_SUITE_TIMEOUT_S  limit of the gpu suite (default 420)
#   GPU_CHECK_CMD_TIMEOUT_S    limit of each mcc / ONNX Runtime command (default 120)
#   GPU_CHECK_RUNS         timed runs on the GPU (default 50; warm-up 5)
#   GPU_CHECK_CPU_RUNS     timed runs on the cpu at batch 1 (default 20; batch 32: a quarter, >= 3)
#   GPU_CHECK_SKELETONS    a folder of model skeletons (scripts/gpu_check.py skeleton: the graph without
#                          its large weights) for a GPU machine the models cannot reach: each is
#                          refilled with seeded random weights of the recorded mean and deviation and
#                          looked for before MODELS_DIR (timings hold; the table says which were refilled)
#   GPU_CHECK_WITHOUT_GPU=1  without a GPU, still run what needs none (fp16 and batch-32 models,
#                          the cpu and ONNX Runtime benchmarks): a check of this script itself
# Exit codes: 0 every step passed or was skipped for a stated reason; 1 a step failed (the gpu
# suite, a cuda/cpu disagreement, a cuda benchmark); 2 no usable mcc build (and none could be
# made); 77 no GPU here: nothing that needs one ran.
set -u -o pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 2
BUILD_DIR=${MCC_BUILD_DIR:-build}
MCC_BIN_SET=${MCC_BIN:-}${MCC_GPU_TESTS_BIN:-}
MCC_BIN=${MCC_BIN:-$BUILD_DIR/mcc}
GPU_TESTS_BIN=${MCC_GPU_TESTS_BIN:-$BUILD_DIR/mcc_gpu_tests}
MODELS_DIR=${MODELS_DIR:-../shared/models}
OUT_DIR=${GPU_CHECK_OUT:-$BUILD_DIR/gpu_check}
BUDGET_S=${GPU_CHECK_BUDGET_S:-780}
SUITE_TIMEOUT_S=${GPU_CHECK_SUITE_TIMEOUT_S:-420}
GPU_RUNS=${GPU_CHECK_RUNS:-50}
CPU_RUNS=${GPU_CHECK_CPU_RUNS:-20}
CMD_TIMEOUT_S=${GPU_CHECK_CMD_TIMEOUT_S:-120}
HELPER="$ROOT/scripts/gpu_check.py"

mkdir -p "$OUT_DIR" || exit 2
LOG="$OUT_DIR/gpu_check.log"
: >"$LOG"
exec > >(tee -a "$LOG") 2>&1
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpu_check.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
TSV="$OUT_DIR/gpu_check.tsv"
printf 'model\tbatch\tprecision\tmcc_cuda_ms\tmcc_cpu_ms\tort_cpu_ms\tort_cuda_ms\ttransfers_per_run\ttransfer_mb_per_run\ttransfer_ms_per_run\tnodes_on_cpu\tnodes\n' >"$TSV"

FAILS=0
SUMMARY=()
REFILLED=()
step() {  # step PASS|FAIL|SKIP name [reason]
  local verdict=$1 name=$2 why=${3:-}
  [ "$verdict" = FAIL ] && FAILS=$((FAILS + 1))
  echo "==== $verdict: $name${why:+ — $why} ===="
  SUMMARY+=("$verdict  $name${why:+ — $why}")
}
over_budget() { [ "$SECONDS" -ge "$BUDGET_S" ]; }
have() { command -v "$1" >/dev/null 2>&1; }
jget() {  # jget KEY FILE: the last numeric value of "KEY": in a JSON file
  grep -o "\"$1\": *[-0-9.eE+]*" "$2" 2>/dev/null | tail -1 | sed 's/.*: *//'
}
PY=0
have python3 && python3 -c 'import numpy, onnx' 2>/dev/null && PY=1

# ---- 0. the machine
echo "== gpu_check: $(date -u '+%Y-%m-%d %H:%M UTC') in $ROOT"
GPU_NAME=none
HAVE_GPU=0
if have nvidia-smi && GPU_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1) && [ -n "$GPU_NAME" ]; then
  HAVE_GPU=1
  echo "GPU: $GPU_NAME"
  nvidia-smi --query-gpu=driver_version,memory.total --format=csv,noheader 2>/dev/null | sed 's/^/  driver, memory: /'
else
  GPU_NAME=none
  echo "GPU: ==== NONE: nvidia-smi is absent or sees no GPU ===="
fi
CPU_NAME=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)
echo "CPU: ${CPU_NAME:-unknown} ($(nproc) cores)"
ORT_INFO="onnxruntime not available"
have python3 && ORT_INFO=$(python3 "$HELPER" info 2>&1 | tail -1)
echo "ONNX Runtime: $ORT_INFO"
ORT_VERSION=$(echo "$ORT_INFO" | sed -n 's/^onnxruntime \([^;]*\);.*/\1/p')
ORT_CPU=0
ORT_CUDA=0
case "$ORT_INFO" in *CPUExecutionProvider*) ORT_CPU=1 ;; esac
case "$ORT_INFO" in *CUDAExecutionProvider*) ORT_CUDA=1 ;; esac
if [ "$ORT_CUDA" = 0 ]; then
  echo "==== ORT CUDA NOT AVAILABLE: onnxruntime-gpu is not installed; ONNX Runtime runs on its CPU provider only ===="
fi
[ "$PY" = 1 ] || echo "==== python3 with numpy and onnx is missing: no ONNX Runtime figures, no batch-32 models ===="

# ---- 1. build
if [ -x "$MCC_BIN" ] && [ -x "$GPU_TESTS_BIN" ]; then
  step SKIP "build" "binaries present: $MCC_BIN, $GPU_TESTS_BIN"
elif [ -n "${MCC_BIN_SET:-}" ]; then
  step FAIL "build" "MCC_BIN / MCC_GPU_TESTS_BIN name no binaries: $MCC_BIN, $GPU_TESTS_BIN"
  exit 2
else
  have nvcc || [ -x /usr/local/cuda/bin/nvcc ] || echo "build: nvcc not found: the build will leave the cuda backend out"
  echo "build: MCC_BUILD_DIR=$BUILD_DIR scripts/build.sh mcc mcc_gpu_tests"
  t0=$SECONDS
  if MCC_BUILD_DIR="$(cd "$(dirname "$BUILD_DIR")" && pwd)/$(basename "$BUILD_DIR")" scripts/build.sh mcc mcc_gpu_tests \
      && [ -x "$MCC_BIN" ] && [ -x "$GPU_TESTS_BIN" ]; then
    step PASS "build" "$((SECONDS - t0)) s"
  else
    step FAIL "build" "no CUDA build of mcc and mcc_gpu_tests (the CUDA toolkit must be found by cmake)"
    exit 2
  fi
fi
"$MCC_BIN" --help >/dev/null 2>&1 || { step FAIL "mcc runs" "$MCC_BIN --help fails (missing shared libraries? LD_LIBRARY_PATH)"; exit 2; }

# cuBLAS is opened at run time (dlopen): put the first folder that has the right one on the path.
CUBLAS_SO=$(grep -a -o -m1 'libcublas\.so\.[0-9][0-9]*' "$MCC_BIN" | head -1)
if [ -n "$CUBLAS_SO" ]; then
  found=""
  for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/lib/x86_64-linux-gnu /usr/lib64 \
      $(have python3 && python3 -c 'import glob, site; print(" ".join(glob.glob(p + "/nvidia/cu*/lib") + glob.glob(p + "/nvidia/cublas/lib")) for p in site.getsitepackages())' 2>/dev/null); do
    if [ -e "$d/$CUBLAS_SO" ]; then found=$d; break; fi
  done
  if [ -n "$found" ]; then
    echo "cuBLAS: $found/$CUBLAS_SO"
    export LD_LIBRARY_PATH="$found${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  else
    echo "cuBLAS: ==== $CUBLAS_SO not found in the usual folders: GEMMs on cuda will fail unless the loader finds it ===="
  fi
fi

if [ "$HAVE_GPU" = 0 ]; then
  step SKIP "gpu suite" "no GPU (nvidia-smi sees none)"
  step SKIP "cuda agreement" "no GPU"
  if [ "${GPU_CHECK_WITHOUT_GPU:-0}" != 1 ]; then
    step SKIP "benchmarks" "no GPU (GPU_CHECK_WITHOUT_GPU=1 runs the cpu and ONNX Runtime side anyway)"
    echo
    printf '%s\n' "${SUMMARY[@]}"
    echo "gpu_check: ==== NO GPU: nothing that needs one ran (exit 77) ===="
    exit 77
  fi
fi

# ---- 2. the gpu test suite
export MCC_SOURCE_DIR="$ROOT"  # the tests' source tree, wherever the binary was built
suite_counts() {  # the doctest and docs summary lines of a log
  grep -E '\[doctest\] test cases:|\[doctest\] assertions:|^docs: [0-9]+ (gpu )?blocks passed' "$1" | sed 's/^/  /'
}
if [ "$HAVE_GPU" = 1 ]; then
  t0=$SECONDS
  suite_log="$OUT_DIR/gpu_suite.log"
  if [ -f "$BUILD_DIR/CTestTestfile.cmake" ] && [ "$GPU_TESTS_BIN" -ef "$BUILD_DIR/mcc_gpu_tests" ] && have ctest; then
    echo "suite: ctest -L gpu in $BUILD_DIR"
    (cd "$BUILD_DIR" && timeout "$SUITE_TIMEOUT_S" ctest -L gpu -V --timeout "$SUITE_TIMEOUT_S") >"$suite_log" 2>&1
    rc=$?
    tail -n 40 "$suite_log"
    v=PASS
    [ "$rc" = 0 ] || v=FAIL
    if grep -q '\*\*\*Skipped' "$suite_log"; then
      v=FAIL
      echo "suite: a gpu test reported itself skipped although nvidia-smi sees a GPU"
    fi
    step "$v" "gpu suite (ctest -L gpu)" "$((SECONDS - t0)) s, rc $rc"
  else
    echo "suite: no ctest tree at $BUILD_DIR for $GPU_TESTS_BIN: running it directly"
    timeout "$SUITE_TIMEOUT_S" "$GPU_TESTS_BIN" >"$suite_log" 2>&1
    rc=$?
    tail -n 30 "$suite_log"
    case $rc in
      0) step PASS "gpu suite (mcc_gpu_tests)" "$((SECONDS - t0)) s" ;;
      77) step FAIL "gpu suite (mcc_gpu_tests)" "nvidia-smi sees '$GPU_NAME' but the CUDA runtime finds no device: $(grep -o 'no CUDA device[^=]*' "$suite_log" | head -1)" ;;
      124) step FAIL "gpu suite (mcc_gpu_tests)" "timed out after $SUITE_TIMEOUT_S s" ;;
      *) step FAIL "gpu suite (mcc_gpu_tests)" "exit $rc" ;;
    esac
    if have python3; then
      t0=$SECONDS
      python3 tests/docs/doc_examples.py --mcc "$MCC_BIN" --gpu >"$OUT_DIR/docs_gpu.log" 2>&1
      rc=$?
      cat "$OUT_DIR/docs_gpu.log" >>"$suite_log"
      tail -n 15 "$OUT_DIR/docs_gpu.log"
      case $rc in
        0) step PASS "gpu examples of the docs (doc_examples.py --gpu)" "$((SECONDS - t0)) s" ;;
        77) step SKIP "gpu examples of the docs" "doc_examples.py sees no GPU" ;;
        *) step FAIL "gpu examples of the docs (doc_examples.py --gpu)" "exit $rc" ;;
      esac
    else
      step SKIP "gpu examples of the docs" "no python3"
    fi
  fi
  echo "suite counts:"
  suite_counts "$suite_log"
fi

# ---- models
if [ -n "${GPU_CHECK_SKELETONS:-}" ]; then
  if [ "$PY" = 1 ]; then
    mkdir -p "$WORK/models"
    for skel in "$GPU_CHECK_SKELETONS"/*.onnx; do
      [ -f "$skel" ] || continue
      if python3 "$HELPER" refill "$skel" "$WORK/models/$(basename "$skel")"; then
        REFILLED+=("$(basename "$skel" .onnx)")
      else
        step FAIL "refill $skel" "scripts/gpu_check.py refill failed"
      fi
    done
  else
    step SKIP "model skeletons" "refilling $GPU_CHECK_SKELETONS needs python3 with numpy and onnx"
  fi
fi
find_model() {  # the first existing file
  local f
  for f in "$@"; do [ -f "$f" ] && { echo "$f"; return 0; }; done
  return 1
}
MODELS=()  # name|path|sample folder (inputs, batch 1; empty: seeded random)|seq
add_model() { MODELS+=("$1|$2|$3|$4"); echo "model: $1: $2"; }
if m=$(find_model golden/mnist/model.onnx "$MODELS_DIR/mnist.onnx"); then add_model mnist "$m" golden/mnist/digit_0 0
else step SKIP "model mnist" "no golden/mnist/model.onnx"; fi
if m=$(find_model "$WORK/models/mobilenet_v2_random_bn_opset13.onnx" "$MODELS_DIR/mobilenet_v2_random_bn_opset13.onnx" ../shared/models/mobilenet_v2_random_bn_opset13.onnx); then
  add_model mobilenet_v2 "$m" "" 0
else step SKIP "model mobilenet_v2" "no mobilenet_v2_random_bn_opset13.onnx in $MODELS_DIR"; fi
if m=$(find_model golden/yolox_nano/model.onnx "$MODELS_DIR/yolox_nano.onnx"); then add_model yolox_nano "$m" golden/yolox_nano/synthetic_0 0
else step SKIP "model yolox_nano" "no golden/yolox_nano/model.onnx"; fi
if m=$(find_model "$WORK/models/minilm_l6_v2.onnx" "$MODELS_DIR/minilm_l6_v2.onnx" "$MODELS_DIR/minilm/minilm_l6_v2.onnx" "$BUILD_DIR/bench_models/minilm/minilm_l6_v2.onnx"); then
  add_model minilm_l6_seq128 "$m" "" 128
else step SKIP "model MiniLM-L6" "no minilm_l6_v2.onnx (../shared/tools/minilm builds it)"; fi
if m=$(find_model "$WORK/models/smollm2_135m.onnx" "$MODELS_DIR/smollm2_135m.onnx" "$MODELS_DIR/smollm2/smollm2_135m.onnx" "$BUILD_DIR/bench_models/smollm2/smollm2_135m.onnx"); then
  add_model smollm2_135m_seq128 "$m" "" 128
else step SKIP "model SmolLM2-135M" "no smollm2_135m.onnx (../shared/tools/smollm2 builds it)"; fi

shape_args() {  # shape_args MODEL BATCH SEQ: --shape flags for mcc (empty without python: the model's own shapes)
  [ "$PY" = 1 ] || return 0
  local s
  s=$(python3 "$HELPER" shapes "$1" "$2" "$3") || return 1
  for s in $s; do printf -- '--shape %s ' "$s"; done
}

# ---- 3. cuda against cpu, batch 1 (and fp16 models made here)
fp16_of() {  # fp16_of IN OUT: mcc convert -p 'fold,fp16{keep_io=true}'
  [ -f "$2" ] && return 0
  timeout "$CMD_TIMEOUT_S" "$MCC_BIN" convert "$1" -o "$2" -p 'fold,fp16{keep_io=true}' >"$2.log" 2>&1 \
    || { echo "fp16: mcc convert $1 failed:"; tail -5 "$2.log"; return 1; }
}
sample_of() {  # sample_of NAME MODEL SAMPLE SEQ: a folder of batch-1 inputs, or nothing
  local dir="$WORK/$1.sample"
  if [ -n "$3" ]; then mkdir -p "$dir" && cp "$3"/*.npy "$dir"/ && rm -f "$dir"/output_*.npy && echo "$dir"; return; fi
  [ "$PY" = 1 ] || return 1
  python3 "$HELPER" sample "$2" "$dir" 1 "$4" >/dev/null && echo "$dir"
}
agree() {  # agree NAME PRECISION MODEL SAMPLE: the cpu's outputs as golden for cuda
  local name=$1 prec=$2 model=$3 sample=$4 g="$WORK/$1.$2.golden"
  rm -rf "$g" "$g.out" && mkdir -p "$g" && cp "$sample"/*.npy "$g"/
  if ! timeout "$CMD_TIMEOUT_S" "$MCC_BIN" eval "$model" --inputs "$g" --save-outputs "$g.out" >"$g.cpu.log" 2>&1; then
    step FAIL "agree $name $prec" "the cpu run failed: $(tail -1 "$g.cpu.log")"; return
  fi
  cp "$g.out"/*/output_*.npy "$g"/
  # A kernel check, judged elementwise (allclose / cosine / SNR by precision). For causal-LM logits
  # eval also judges perplexity and next-token agreement, which one sample of 127 scored tokens
  # cannot decide at 0.99 (and a refilled random-weight LM has near-tied logits): those are off.
  local lm=()
  case "$name" in smollm2*) lm=(--min-token-agreement 0 --max-perplexity-ratio 1e30) ;; esac
  timeout "$CMD_TIMEOUT_S" "$MCC_BIN" eval "$model" --golden "$g" --backend cuda "${lm[@]}" >"$g.cuda.log" 2>&1
  local rc=$?
  sed -n '/^output/,/^verdict/p' "$g.cuda.log" | sed 's/^/  /'
  if [ $rc = 0 ]; then step PASS "agree $name $prec: cuda matches cpu"
  else step FAIL "agree $name $prec: cuda against cpu" "exit $rc: $(grep -m1 'error' "$g.cuda.log")"; fi
}
declare -A SAMPLE FP16
for entry in "${MODELS[@]}"; do
  IFS='|' read -r name path sample seq <<<"$entry"
  if fp16_of "$path" "$WORK/$name.fp16.onnx"; then FP16[$name]="$WORK/$name.fp16.onnx"
  else step FAIL "fp16 model of $name" "mcc convert -p 'fold,fp16{keep_io=true}' failed"; fi
  s=$(sample_of "$name" "$path" "$sample" "$seq") && SAMPLE[$name]=$s
done
if [ "$HAVE_GPU" = 1 ]; then
  for entry in "${MODELS[@]}"; do
    IFS='|' read -r name path sample seq <<<"$entry"
    if over_budget; then step SKIP "agree $name" "time budget ($BUDGET_S s) spent"; continue; fi
    if [ -z "${SAMPLE[$name]:-}" ]; then step SKIP "agree $name" "no input sample (needs python3 with numpy)"; continue; fi
    agree "$name" fp32 "$path" "${SAMPLE[$name]}"
    [ -n "${FP16[$name]:-}" ] && agree "$name" fp16 "${FP16[$name]}" "${SAMPLE[$name]}"
    if [ -n "$sample" ]; then  # ONNX Runtime's outputs shipped with the golden models
      if timeout "$CMD_TIMEOUT_S" "$MCC_BIN" eval "$path" --golden "$sample" --backend cuda >"$WORK/$name.golden.log" 2>&1; then
        step PASS "golden $name fp32 on cuda: matches ONNX Runtime's outputs"
      else
        step FAIL "golden $name fp32 on cuda" "$(grep -m1 -E 'error|FAIL' "$WORK/$name.golden.log")"
      fi
    fi
  done
fi

# ---- the table
render_table() {  # gpu_check.md from gpu_check.tsv (after every row: a cut-short run keeps its table)
  TABLE="$OUT_DIR/gpu_check.md"
  ort_note="ORT CUDA: not available (onnxruntime-gpu not installed)"
  [ "$ORT_CUDA" = 1 ] && ort_note="ORT CUDA: CUDAExecutionProvider, numpy inputs and outputs (copies in every run)"
  {
    echo "GPU: $GPU_NAME; CPU: ${CPU_NAME:-unknown} ($(nproc) cores); ONNX Runtime ${ORT_VERSION:-not available}; $(date -u '+%Y-%m-%d')"
    echo "Median latency in ms (mcc cuda: $GPU_RUNS runs; cpu: $CPU_RUNS runs at batch 1, fewer at 32); $ort_note."
    echo "Transfers: measured host<->device copies per run of mcc cuda (count, MB); cpu nodes: nodes mcc left on the cpu."
    echo "(gpu_check.tsv also has the ms spent in copy calls per run: the output copy waits for the queued kernels and"
    echo "the one-time weight uploads are averaged in, so it is no measure of the copies alone.)"
    [ "${#REFILLED[@]}" -gt 0 ] && echo "Seeded random weights (refilled skeletons; same graph and shapes, timings only): ${REFILLED[*]}."
    echo
    echo "| model | batch | precision | mcc cuda | mcc cpu | ORT CPU | ORT CUDA | cuda speed-up over mcc cpu | mcc cuda vs best ORT | transfers/run | cpu nodes |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|"
    awk -F'\t' 'NR > 1 {
      cuda = $4; cpu = $5; oc = $6; og = $7
      best = ""; if (oc != "") best = oc; if (og != "" && (best == "" || og + 0 < best + 0)) best = og
      sp = (cuda != "" && cpu != "") ? sprintf("%.1fx", cpu / cuda) : "-"
      vs = (cuda != "" && best != "") ? sprintf("%.2fx", best / cuda) : "-"
      tr = ($8 != "") ? sprintf("%g (%s MB)", $8, $9) : "-"
      nc = ($11 != "") ? $11 " of " $12 : "-"
      printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3,
        cuda == "" ? "-" : sprintf("%.3f", cuda), cpu == "" ? "-" : sprintf("%.3f", cpu),
        oc == "" ? "-" : sprintf("%.3f", oc), og == "" ? "n/a" : sprintf("%.3f", og), sp, vs, tr, nc
    }' "$TSV"
    echo
    echo "mcc cuda vs best ORT: the best ONNX Runtime median divided by mcc's cuda median (above 1: mcc cuda faster)."
  } >"$TABLE"
}

# ---- 4. benchmarks
echo
echo "== benchmarks: median latency ms; mcc cuda ${GPU_RUNS} runs after 5 warm-up; cpu ${CPU_RUNS} runs at batch 1"
bench_mcc() {  # bench_mcc BACKEND MODEL BATCH SEQ JSON: 0 on success
  local backend=$1 model=$2 batch=$3 seq=$4 json=$5 runs warm inputs
  if [ "$backend" = cuda ]; then runs=$GPU_RUNS warm=5
  elif [ "$batch" = 1 ]; then runs=$CPU_RUNS warm=3
  else runs=$((CPU_RUNS / 4 > 3 ? CPU_RUNS / 4 : 3)) warm=1; fi
  inputs=$(bench_inputs "$model" "$batch" "$seq")
  # shellcheck disable=SC2086
  timeout "$CMD_TIMEOUT_S" "$MCC_BIN" bench "$model" --backend "$backend" $inputs --warmup "$warm" --runs "$runs" --json \
    >"$json" 2>"$json.err"
}
bench_inputs() {  # bench_inputs MODEL BATCH SEQ: --inputs DIR, the seeded inputs ONNX Runtime gets too
  [ "$PY" = 1 ] || return 0  # mcc's own random inputs at the model's shapes
  local dir
  dir="$WORK/in.$(echo "$1" | sed 's/\.onnx$//; s/\.fp16$//; s/[^A-Za-z0-9]/_/g').$2"
  [ -d "$dir" ] || python3 "$HELPER" sample "$1" "$dir" "$2" "$3" >/dev/null 2>&1 || { shape_args "$1" "$2" "$3"; return; }
  printf -- '--inputs %s' "$dir"
}
bench_ort() {  # bench_ort cpu|cuda MODEL BATCH SEQ: prints the median ms
  local prov=$1 model=$2 batch=$3 seq=$4 runs warm out
  if [ "$prov" = cuda ]; then runs=$GPU_RUNS warm=5
  elif [ "$batch" = 1 ]; then runs=$CPU_RUNS warm=3
  else runs=$((CPU_RUNS / 4 > 3 ? CPU_RUNS / 4 : 3)) warm=1; fi
  out=$(timeout "$CMD_TIMEOUT_S" python3 "$HELPER" ort "$model" "$batch" --seq "$seq" --provider "$prov" --runs "$runs" --warmup "$warm" 2>&1 | tail -1)
  echo "$out" | grep -o '"median_ms": *[0-9.eE+-]*' | sed 's/.*: *//'
}
fmt() { if [ -n "$1" ]; then printf '%.3f ms' "$1"; else printf '%s' "${2:--}"; fi; }

declare -A BATCHED
for batch in 1 32; do
  for prec in fp32 fp16; do
    for entry in "${MODELS[@]}"; do
      IFS='|' read -r name path sample seq <<<"$entry"
      label="bench $name batch $batch $prec"
      if over_budget; then step SKIP "$label" "time budget ($BUDGET_S s) spent"; continue; fi
      model=$path
      if [ "$batch" = 32 ]; then
        if [ -z "${BATCHED[$name]+x}" ]; then
          BATCHED[$name]=""
          if [ "$PY" != 1 ]; then echo "batch 32: $name: needs python3 with onnx"
          elif python3 - "$path" <<'EOF'; then BATCHED[$name]=$path
import onnx, sys
m = onnx.load(sys.argv[1], load_external_data=False)
inits = {i.name for i in m.graph.initializer}
d = [i.type.tensor_type.shape.dim for i in m.graph.input if i.name not in inits]
sys.exit(0 if d and all(x and not x[0].HasField("dim_value") for x in d) else 1)
EOF
          else
            why=$(python3 "$HELPER" batchable "$path" "$WORK/$name.b.onnx" 2>&1 | tail -1)
            echo "batch 32: $name: $why"
            [ -f "$WORK/$name.b.onnx" ] && case "$why" in "batch dim is free"*) BATCHED[$name]="$WORK/$name.b.onnx" ;; esac
          fi
        fi
        model=${BATCHED[$name]}
        if [ -z "$model" ]; then step SKIP "$label" "the model's batch dim is fixed at 1"; continue; fi
      fi
      if [ "$prec" = fp16 ]; then
        if [ "$model" = "$path" ]; then model=${FP16[$name]:-}
        else fp16_of "$model" "$WORK/$name.b.fp16.onnx" && model="$WORK/$name.b.fp16.onnx" || model=""; fi
        if [ -z "$model" ]; then step FAIL "$label" "no fp16 model"; continue; fi
      fi
      echo "-- $label: $model"
      j="$WORK/$name.$batch.$prec"
      cuda_ms="" cpu_ms="" ortc_ms="" ortg_ms="" tr="" tmb="" tms="" ncpu="" nall=""
      if [ "$HAVE_GPU" = 1 ]; then
        if bench_mcc cuda "$model" "$batch" "$seq" "$j.cuda.json"; then
          cuda_ms=$(jget median_ms "$j.cuda.json")
          tr=$(jget transfers_per_run "$j.cuda.json")
          tmb=$(awk -v b="$(jget transfer_bytes_per_run "$j.cuda.json")" 'BEGIN{printf "%.3f", b / 1e6}')
          tms=$(jget transfer_ms_per_run "$j.cuda.json")
          ncpu=$(jget nodes_on_cpu "$j.cuda.json")
          nb=$(jget nodes_on_backend "$j.cuda.json")
          nall=$(( ${ncpu:-0} + ${nb:-0} ))
          echo "  mcc cuda: $(fmt "$cuda_ms"); transfers per run $tr ($tmb MB; $(fmt "$tms") in copy calls); nodes on cpu $ncpu of $nall"
        else
          step FAIL "$label: mcc cuda" "$(tail -1 "$j.cuda.json.err")"
        fi
      fi
      if bench_mcc cpu "$model" "$batch" "$seq" "$j.cpu.json"; then
        cpu_ms=$(jget median_ms "$j.cpu.json"); echo "  mcc cpu: $(fmt "$cpu_ms")"
      else echo "  mcc cpu: failed: $(tail -1 "$j.cpu.json.err")"; fi
      if [ "$PY" = 1 ] && [ "$ORT_CPU" = 1 ]; then
        ortc_ms=$(bench_ort cpu "$model" "$batch" "$seq"); echo "  ORT CPU: $(fmt "$ortc_ms" failed)"
      fi
      if [ "$PY" = 1 ] && [ "$ORT_CUDA" = 1 ] && [ "$HAVE_GPU" = 1 ]; then
        ortg_ms=$(bench_ort cuda "$model" "$batch" "$seq"); echo "  ORT CUDA: $(fmt "$ortg_ms" failed)"
      fi
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$batch" "$prec" "$cuda_ms" "$cpu_ms" "$ortc_ms" \
        "$ortg_ms" "$tr" "$tmb" "$tms" "$ncpu" "$nall" >>"$TSV"
      render_table
      if [ "$HAVE_GPU" = 1 ] && [ -n "$cuda_ms" ]; then step PASS "$label"
      elif [ "$HAVE_GPU" = 0 ]; then step SKIP "$label: mcc cuda" "no GPU"; fi
    done
  done
done

render_table
echo
echo "== summary"
printf '%s\n' "${SUMMARY[@]}"
echo
cat "$TABLE"
echo
if [ "$HAVE_GPU" = 0 ]; then
  echo "gpu_check: ==== NO GPU: the cuda steps were skipped (exit 77) ===="
  exit 77
fi
if [ "$FAILS" -gt 0 ]; then
  echo "gpu_check: ==== FAIL: $FAILS step(s) failed ===="
  exit 1
fi
echo "gpu_check: ==== PASS ===="
exit 0
