#!/usr/bin/env bash
# The main job on the bundled model: inspect golden/mnist/model.onnx, convert it (a lossless round
# trip with the empty pipeline), show the sidecar state, and check the converted model against the
# golden outputs made by ONNX Runtime. Run scripts/setup.sh first.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mcc="$root/build/mcc"
model="$root/golden/mnist/model.onnx"
out_dir="$root/build/demo"
mkdir -p "$out_dir"

echo "== mcc inspect golden/mnist/model.onnx"
"$mcc" inspect "$model"
echo
echo "== mcc convert golden/mnist/model.onnx -o build/demo/mnist.onnx"
"$mcc" convert "$model" -o "$out_dir/mnist.onnx"
echo
echo "== build/demo/mnist.mcc.json"
cat "$out_dir/mnist.mcc.json"
echo
echo "== mcc eval build/demo/mnist.onnx --golden golden/mnist (ONNX Runtime's outputs)"
"$mcc" eval "$out_dir/mnist.onnx" --golden "$root/golden/mnist"
echo
echo "== mcc inspect build/demo/mnist.onnx --dump (first lines)"
"$mcc" inspect "$out_dir/mnist.onnx" --dump > "$out_dir/mnist.ir.txt"
head -n 8 "$out_dir/mnist.ir.txt"
