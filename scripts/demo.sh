#!/usr/bin/env bash
# The main job on the bundled MNIST model, with bundled data only (golden/mnist, made by
# golden/make_mnist_samples.py): quantize golden/mnist/model.onnx to INT8 with 100 calibration
# digits (its report: what it wrote, the size before and after, the self-check's verdict on the
# 500 digits of golden/mnist/eval, the time), show the key lines of the sidecar state, evaluate the INT8 model against the fp32 model
# on 500 other labelled digits (top-1 of both; the verdict fails on a top-1 drop over 0.2 points,
# one digit in 500), and replay the state to show the same bytes come out. Exits non-zero when
# any step fails. Run scripts/setup.sh first. MCC (the binary, default build/mcc) and MCC_DEMO_OUT
# (default build/demo) override where it runs from and writes to, as the test of this script does.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
mcc=${MCC:-build/mcc}
model=golden/mnist/model.onnx
out=${MCC_DEMO_OUT:-build/demo}
mkdir -p "$out"
rm -f "$out"/mnist.int8.* "$out"/mnist.replay.*

step() { printf '\n== %s\n' "$*"; }

step "mcc inspect $model (first lines)"
"$mcc" inspect "$model" > "$out/inspect.txt"
head -n 8 "$out/inspect.txt"

step "mcc quantize $model -o $out/mnist.int8.onnx --calib golden/mnist/calib --eval golden/mnist/eval"
"$mcc" quantize "$model" -o "$out/mnist.int8.onnx" --calib golden/mnist/calib --eval golden/mnist/eval

step "$out/mnist.int8.mcc.json (key lines)"
python3 - "$out/mnist.int8.mcc.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
print("input:    %s  sha256 %s" % (s["input"]["path"], s["input"]["sha256"]))
print("output:   %s  sha256 %s" % (s["output"]["path"], s["output"]["sha256"]))
print("stages:   %s" % ", ".join(st["label"] for st in s["stages"]))
for st in s["stages"]:
    rec = st.get("record") or {}
    if "points" not in rec:
        continue
    cal = rec.get("calibration", {})
    print("calib:    %s, %s samples, method %s, data sha256 %s" % (cal.get("data"), cal.get("samples"), cal.get("method"), cal.get("sha256")))
    roles = {}
    for p in rec["points"]:
        roles[p["role"]] = roles.get(p["role"], 0) + 1
    print("points:   " + ", ".join("%d %s" % (n, r) for r, n in sorted(roles.items())))
    for p in rec["points"][:2]:
        print("  %-12s %-10s %s scale %.6g zero_point %s range %s" % (p["tensor"], p["role"], p["dtype"], p["scale"], p["zero_point"], p["range"]))
for c in s.get("checks", []):
    print("check:    %s %s %s (threshold %s, %s samples): %s" % (c["output"], c["metric"], c["value"], c["threshold"], c["samples"], c["verdict"]))
EOF
"$mcc" inspect "$out/mnist.int8.onnx" > "$out/inspect.int8.txt"
grep '^quantized:' "$out/inspect.int8.txt"

step "mcc eval $out/mnist.int8.onnx --reference $model --inputs golden/mnist/eval --labels golden/mnist/eval_labels.txt --max-top1-drop 0.2"
echo "(model: the INT8 model; reference: the fp32 model; 500 labelled digits not used for calibration)"
"$mcc" eval "$out/mnist.int8.onnx" --reference "$model" --inputs golden/mnist/eval \
  --labels golden/mnist/eval_labels.txt --max-top1-drop 0.2

step "mcc quantize $model -o $out/mnist.replay.onnx --state $out/mnist.int8.mcc.json (no calibration data)"
"$mcc" quantize "$model" -o "$out/mnist.replay.onnx" --state "$out/mnist.int8.mcc.json" -q
sha256sum "$out/mnist.int8.onnx" "$out/mnist.replay.onnx"
a=$(sha256sum < "$out/mnist.int8.onnx")
b=$(sha256sum < "$out/mnist.replay.onnx")
if [ "$a" != "$b" ]; then
  echo "replay: the models differ" >&2
  exit 1
fi
echo "replay: byte-identical"
