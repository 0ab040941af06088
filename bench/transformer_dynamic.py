#!/usr/bin/env python3
"""Dynamic INT8 on a trained transformer: size and accuracy of `mcc quantize --mode dynamic` on
MiniLM-L6 (all-MiniLM-L6-v2, ../shared/tools/minilm), next to ONNX Runtime's quantize_dynamic
(QInt8 weights, per_channel=True; it also stores the Gather embedding table as int8).

Every model runs in ONNX Runtime (the independent reference) on the 48 sentences of
bench/minilm_heldout.py (text no mcc setting was tuned on; --shared-samples uses the 64 tokenized
samples in ../shared/tools/minilm/samples instead); the reference is ONNX Runtime's fp32 output.
Reported per model: file size, cosine of sentence_embedding to fp32 (mean and min over the
samples), the largest |difference| of last_hidden_state at unmasked positions, and for mcc's
outputs whether `--state` replays byte-identically and how mcc's cpu backend compares with
ONNX Runtime on the first --cpu-samples samples (mcc eval --golden against ORT with its graph
optimisations off; mcc_min_cosine) beside how far ORT's own two optimisation levels are apart on
them (ort_levels_min_cosine).

mcc is run with MatMul layers only (embeddings=false); with its defaults (embeddings=true: the
embedding tables int8, one scale per column, each Gather reading the int8 rows;
dynamic_activations=auto: per-row ranges on the feed-forward activations); with per-row ranges on
every activation (dynamic_activations=per_token); with SmoothQuant
(smooth_quant=0.5, LayerNormalization outliers folded into the weights, maxima calibrated on the 64
shared samples, so judge this row on the held-out sentences); and with every layer quantized at run
time with one range per tensor (dynamic_activations=per_tensor float_gelu_inputs=false). The int8 tables are what make the file size comparable with ONNX
Runtime's.

usage: bench/transformer_dynamic.py [--model /work/minilm/minilm_l6_v2.onnx] [--mcc build/mcc]
                                    [--work DIR] [--cpu-samples 4] [--json FILE]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort

from common import cosine, emit_json
from minilm_heldout import heldout_samples, tokenizer_json
from transformer_fp16 import INPUTS, SAMPLES, load_samples, measure, minilm_work_dir

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()[-2000:]}")
    return r


def cpu_vs_ort(mcc, model, work, n):
    """mcc's cpu backend against ONNX Runtime's outputs for `model` on the first n held-out
    sentences, unpadded. (On padded inputs the run-time ranges of DynamicQuantizeLinear include the
    padded positions, whose hidden states are ill-conditioned: implementations disagree there, ONNX
    Runtime with and without its graph optimisations by cosine 0.997 on shared sample 03.)"""
    golden = os.path.join(work, os.path.basename(model) + ".golden")
    shutil.rmtree(golden, ignore_errors=True)
    src = os.path.join(work, "heldout")
    for d in sorted(x for x in os.listdir(src) if os.path.isdir(os.path.join(src, x)))[:n]:
        os.makedirs(os.path.join(golden, d))
        for k in INPUTS:
            shutil.copy(os.path.join(src, d, k + ".npy"), os.path.join(golden, d, k + ".npy"))
    run([sys.executable, os.path.join(ROOT, "tests", "cli", "ort_outputs.py"), model, golden])
    r = subprocess.run([mcc, "eval", model, "--golden", golden, "--min-cosine", "0.9999", "--json"],
                       capture_output=True, text=True)
    try:
        rep = json.loads(r.stdout)
    except json.JSONDecodeError:
        return {"exit": r.returncode, "error": r.stderr.strip()[-500:]}
    mcc_min = min((o["cosine"] for s in rep.get("per_sample", []) for o in s["outputs"]), default=None)
    return {"exit": r.returncode, "mcc_min_cosine": mcc_min, "ort_levels_min_cosine": ort_levels_spread(model, golden),
            "report": rep}


def ort_levels_spread(model, golden):
    """The least cosine, over the samples and outputs of `golden`, between ONNX Runtime's outputs at
    ORT_ENABLE_ALL and at ORT_DISABLE_ALL (the golden ones): how far ORT moves from itself. Run-time
    ranges turn the last-bit differences of fused kernels into whole-code flips that later layers
    carry on (MiniLM-L6 per_token: cosine 0.9989 between the two levels), and mcc's cpu backend
    differs from ORT by as much; per tensor both levels agree."""
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])  # ORT_ENABLE_ALL
    names = [i.name for i in sess.get_inputs()]
    least = 1.0
    for d in sorted(os.listdir(golden)):
        feeds = {n: np.load(os.path.join(golden, d, n + ".npy")) for n in names}
        for k, out in enumerate(sess.run(None, feeds)):
            least = min(least, cosine(np.load(os.path.join(golden, d, "output_%d.npy" % k)), out))
    return least


def mcc_dynamic(a, work, samples, name, pipeline):
    out = os.path.join(work, name + ".onnx")
    run([a.mcc, "convert", a.model, "-o", out, "-p", pipeline, "--json"])
    onnx.checker.check_model(out, full_check=True)
    res = measure(out, samples)
    res["pipeline"] = pipeline
    state = json.load(open(os.path.splitext(out)[0] + ".mcc.json"))
    res["stats"] = state["stages"][-1]["stats"]
    replay = os.path.join(work, name + "_replay.onnx")
    run([a.mcc, "convert", a.model, "-o", replay, "--state", os.path.splitext(out)[0] + ".mcc.json"])
    res["replay_identical"] = open(out, "rb").read() == open(replay, "rb").read()
    if a.cpu_samples > 0:
        res["cpu_vs_ort"] = cpu_vs_ort(a.mcc, out, work, a.cpu_samples)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="/work/minilm/minilm_l6_v2.onnx")
    ap.add_argument("--mcc", default=os.path.join(ROOT, "build", "mcc"))
    ap.add_argument("--work", default=None)
    ap.add_argument("--cpu-samples", type=int, default=4)
    ap.add_argument("--shared-samples", action="store_true")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    work = minilm_work_dir(a, "transformer_dynamic_")
    held = heldout_samples(work, tokenizer_json(a.model), a.model)  # also the cpu-vs-ORT inputs
    samples = load_samples() if a.shared_samples else held
    results = {"judged": "shared samples" if a.shared_samples else "held-out sentences", "samples": len(samples),
               "fp32": measure(a.model, samples)}
    results["mcc_matmul"] = mcc_dynamic(a, work, samples, "mcc_dynamic", "fold,quantize{mode=dynamic embeddings=false}")
    results["mcc_embeddings"] = mcc_dynamic(a, work, samples, "mcc_dynamic_emb", "fold,quantize{mode=dynamic}")
    results["mcc_embeddings_per_token"] = mcc_dynamic(a, work, samples, "mcc_dynamic_emb_tok",
                                                      "fold,quantize{mode=dynamic dynamic_activations=per_token}")
    results["mcc_embeddings_smooth"] = mcc_dynamic(
        a, work, samples, "mcc_dynamic_emb_sq", f"fold,quantize{{mode=dynamic calib={SAMPLES} smooth_quant=0.5}}")
    results["mcc_embeddings_all_dynamic"] = mcc_dynamic(a, work, samples, "mcc_dynamic_emb_all",
                                                        "fold,quantize{mode=dynamic dynamic_activations=per_tensor float_gelu_inputs=false}")

    from onnxruntime.quantization import QuantType, quantize_dynamic
    ref = os.path.join(work, "ort_dynamic.onnx")
    quantize_dynamic(a.model, ref, weight_type=QuantType.QInt8, per_channel=True)
    results["ort_dynamic_per_channel"] = measure(ref, samples)

    emit_json(results, a.json, indent=1)


if __name__ == "__main__":
    main()
