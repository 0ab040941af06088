#!/usr/bin/env python3
"""Static INT8 on a trained transformer with and without SmoothQuant: `mcc quantize --no-check`
(calibrated uint8 activations, per-channel int8 weights, QDQ) on MiniLM-L6 (all-MiniLM-L6-v2,
../shared/tools/minilm), plain and with --smooth-quant ALPHA for each --alpha, next to ONNX
Runtime's quantize_static (QDQ, QUInt8 activations, QInt8 per-channel weights, MinMax): MatMul
inputs only as mcc, MatMul inputs and outputs (its default for MatMul), all its default op types;
and, when neural-compressor is importable (its SmoothQuant needs neural_compressor.adaptor.ox_utils,
e.g. neural-compressor 3.0.2 from PyPI), its SmoothQuant extra option on MatMul inputs, which
inserts a Mul before every MatMul input it cannot fold.

Every model is calibrated on the 64 tokenized samples in ../shared/tools/minilm/samples and judged
on the 48 other sentences of bench/minilm_heldout.py, run in ONNX Runtime (the independent
reference) against ONNX Runtime's fp32 outputs (--judge-calibration judges on the calibration
samples instead). Reported per model: file size, cosine of sentence_embedding to fp32 (mean
and min), the largest |difference| of last_hidden_state at unmasked positions; for mcc also the
stage's stats (smoothed LayerNormalizations, float copies), the seconds it took, and whether
`--state` replays byte-identically.

usage: bench/transformer_static.py [--model /work/minilm/minilm_l6_v2.onnx] [--mcc build/mcc]
                                   [--alpha 0.5 --alpha 0.8] [--work DIR] [--skip-ort] [--json FILE]
"""
import argparse
import json
import os
import time

import onnx

from common import emit_json, run
from minilm_heldout import heldout_samples, tokenizer_json
from transformer_fp16 import SAMPLES, load_samples, measure, minilm_work_dir

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def mcc_static(a, work, samples, name, extra):
    """mcc quantize calibrated on SAMPLES; `samples` are the ones judged."""
    out = os.path.join(work, name + ".onnx")
    _, secs = run([a.mcc, "quantize", a.model, "-o", out, "--calib", SAMPLES, "--no-check"] + extra)
    onnx.checker.check_model(out, full_check=True)
    res = measure(out, samples)
    res["flags"] = " ".join(extra)
    res["seconds"] = round(secs, 2)
    sidecar = os.path.splitext(out)[0] + ".mcc.json"
    state = json.load(open(sidecar))
    stage = [s for s in state["stages"] if s["pass"] == "quantize"][0]
    res["stats"] = {k: v for k, v in stage["stats"].items()
                    if k.startswith("smooth_quant") or k in ("nodes_quantized", "activations", "weights")}
    sq = stage["record"].get("smooth_quant")
    if sq:
        res["smoothed"] = [{"site": l.get("layer_norm", l.get("activation")), "activation_max": l["activation_max"],
                            "smoothed_max": l["smoothed_max"]} for l in sq["layers"]]
        res["left_alone"] = sq["skipped"]
    replay = os.path.join(work, name + "_replay.onnx")
    run([a.mcc, "quantize", a.model, "-o", replay, "--state", sidecar])
    res["replay_identical"] = open(out, "rb").read() == open(replay, "rb").read()
    return res


class Reader:
    """ONNX Runtime's CalibrationDataReader over the sample folders."""

    def __init__(self, samples):
        self.feeds = [dict(f) for f, _ in samples]
        self.i = 0

    def get_next(self):
        if self.i >= len(self.feeds):
            return None
        self.i += 1
        return self.feeds[self.i - 1]

    def rewind(self):
        self.i = 0

    def __iter__(self):  # ONNX Runtime's SmoothQuant option iterates over the reader
        return iter(self.feeds)


def ort_static(a, work, samples, name, calib, **kw):
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static
    out = os.path.join(work, name + ".onnx")
    t0 = time.perf_counter()
    quantize_static(a.model, out, Reader(calib), quant_format=QuantFormat.QDQ, activation_type=QuantType.QUInt8,
                    weight_type=QuantType.QInt8, per_channel=True, calibrate_method=CalibrationMethod.MinMax, **kw)
    res = measure(out, samples)
    res["seconds"] = round(time.perf_counter() - t0, 2)
    res["options"] = {k: (v if not isinstance(v, dict) else dict(v)) for k, v in kw.items()}
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="/work/minilm/minilm_l6_v2.onnx")
    ap.add_argument("--mcc", default=os.path.join(ROOT, "build", "mcc"))
    ap.add_argument("--alpha", type=float, action="append", default=None)
    ap.add_argument("--work", default=None)
    ap.add_argument("--skip-ort", action="store_true")
    ap.add_argument("--judge-calibration", action="store_true")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    alphas = a.alpha or [0.5, 0.8]
    work = minilm_work_dir(a, "transformer_static_")
    calib = load_samples()
    samples = calib if a.judge_calibration else heldout_samples(work, tokenizer_json(a.model), a.model)
    results = {"calibration_samples": len(calib), "judged": "calibration samples" if a.judge_calibration else
               "held-out sentences", "samples": len(samples), "fp32": measure(a.model, samples)}
    results["mcc_static"] = mcc_static(a, work, samples, "mcc_static", [])
    for alpha in alphas:
        results[f"mcc_static_smooth_{alpha:g}"] = mcc_static(a, work, samples, f"mcc_static_sq{alpha:g}",
                                                             ["--smooth-quant", f"{alpha:g}"])
    if not a.skip_ort:
        # MatMul inputs only, as mcc quantizes them (ONNX Runtime also quantizes MatMul outputs by default).
        inputs_only = {"OpTypesToExcludeOutputQuantization": ["MatMul"]}
        results["ort_static_matmul_inputs"] = ort_static(a, work, samples, "ort_static_matmul_inputs", calib,
                                                         op_types_to_quantize=["MatMul"], extra_options=inputs_only)
        results["ort_static_matmul"] = ort_static(a, work, samples, "ort_static_matmul", calib, op_types_to_quantize=["MatMul"])
        results["ort_static_default"] = ort_static(a, work, samples, "ort_static_default", calib)
        try:
            import neural_compressor  # noqa: F401  (ONNX Runtime's SmoothQuant option needs it)
            for alpha in alphas:
                results[f"ort_static_matmul_inputs_smooth_{alpha:g}"] = ort_static(
                    a, work, samples, f"ort_static_sq{alpha:g}", calib, op_types_to_quantize=["MatMul"],
                    extra_options=dict(inputs_only, SmoothQuant=True, SmoothQuantAlpha=alpha))
        except Exception as e:  # missing package or a failure inside it: reported, not fatal
            results["ort_static_smooth"] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
    emit_json(results, a.json, indent=1)


if __name__ == "__main__":
    main()
