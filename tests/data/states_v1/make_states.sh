#!/usr/bin/env bash
# Writes the replay fixtures: one sidecar state per case, made by the mcc build given as $1 from
# models and samples in golden/, with one thread. Run from the project root. The states are kept
# as that mcc wrote them: tests/cli/replay_fixture_test.cpp replays each with today's mcc and checks
# the output bytes (sha256) and the stage records have not changed. Only missing states are
# written: add a case at the end and run this to pin a new stage's output.
set -euo pipefail
mcc="${1:-build/mcc}"
out=tests/data/states_v1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
make_state() {  # NAME MODEL PIPELINE; an existing state is kept (it pins what an earlier mcc wrote)
  if [ -e "$out/$1.mcc.json" ]; then return; fi
  "$mcc" convert "$2" -o "$tmp/$1.onnx" -p "$3" --threads 1 -q
  # Stored on one line (same content, a quarter of the pretty-printed size).
  python3 -c 'import json, sys; print(json.dumps(json.load(open(sys.argv[1])), separators=(",", ":"), ensure_ascii=False))' \
    "$tmp/$1.mcc.json" > "$out/$1.mcc.json"
}
make_state mnist_quantize golden/mnist/model.onnx 'quantize{calib=golden/mnist method=percentile exclude=Times212}'
make_state mnist_prune golden/mnist/model.onnx 'prune{sparsity=0.5}'
make_state yolox_fold_fp16 golden/yolox_nano/model.onnx 'fold,fp16{keep_io=true fp32_ops=Resize exclude=Conv_41}'
make_state yolox_quantize golden/yolox_nano/model.onnx 'fold,quantize{calib=golden/yolox_nano method=auto keep_float_top=2 sensitivity_samples=1 rules=Conv_4[0-9]:per_tensor}'
make_state yolox_prune_channel golden/yolox_nano/model.onnx 'fold,prune{mode=channel sparsity=0.3 round_to=4 exclude=Conv_41}'
make_state silero_fold_bf16 golden/silero_vad/model.onnx 'fold,fp16{dtype=bf16}'
make_state mnist_quantize_16bit golden/mnist/model.onnx 'quantize{calib=golden/mnist per_channel=false keep_float_top=1 mixed_fallback=16bit sensitivity_samples=1 bias_correction=false}'
