#!/usr/bin/env python3
"""Weight-only int4 on a trained transformer: `mcc quantize --mode weight_only` (RTN and GPTQ, block
32) on MiniLM-L6 (all-MiniLM-L6-v2, ../shared/tools/minilm), next to ONNX Runtime's
matmul_nbits_quantizer (its default, RTN and GPTQ configurations, same block size, com.microsoft
MatMulNBits output).

Calibration (GPTQ, both tools): the 64 tokenized samples of ../shared/tools/minilm/samples_natural.
Judged on other text: the 48 sentences of bench/minilm_heldout.py, tokenized here, with ONNX
Runtime's fp32 outputs as the reference. Every model runs in ONNX Runtime (the independent
runtime). Reported per model: file size, sentence_embedding cosine to fp32 (mean, min), the largest
|difference| of last_hidden_state over real tokens, ONNX Runtime latency (1 thread, median of 20
runs of the longest held-out sentence); for mcc's models also whether `--state` replays
byte-identically and whether mcc's cpu backend matches ONNX Runtime on the first --cpu-samples
held-out sentences (mcc eval --golden, cosine >= 0.9999).

ONNX Runtime's GPTQ runs through neural-compressor, which imports torch: with a Python that has
neither, its row says so; --ort-only measures ONNX Runtime's rows alone, e.g. under a virtual
environment made with --system-site-packages over Debian's python3-torch.

usage: bench/transformer_weight_only.py [--model /work/minilm/minilm_l6_v2.onnx] [--mcc build/mcc]
                                        [--work DIR] [--block-size 32] [--cpu-samples 4] [--ort-only]
                                        [--json FILE]
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort

from common import emit_json, print_table
from minilm_heldout import heldout_samples, tokenizer_json
from transformer_dynamic import cpu_vs_ort as dynamic_cpu_vs_ort
from transformer_fp16 import measure as accuracy
from transformer_fp16 import minilm_work_dir

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CALIB = os.path.join(ROOT, "..", "shared", "tools", "minilm", "samples_natural")
INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()[-2000:]}")
    return r


def session(path, threads=1):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def measure(path, samples):
    """transformer_fp16.measure's accuracy figures plus ONNX Runtime's latency (1 thread, median of
    20 runs of the longest sentence)."""
    res = accuracy(path, samples)
    s = session(path)
    longest = max(samples, key=lambda x: x[0]["input_ids"].shape[1])[0]
    s.run(None, longest)
    times = []
    for _ in range(20):
        t0 = time.perf_counter()
        s.run(None, longest)
        times.append(time.perf_counter() - t0)
    res["ort_ms"] = 1000 * float(np.median(times))
    return res


def cpu_vs_ort(mcc, model, work, n):
    """transformer_dynamic.cpu_vs_ort (unpadded held-out sentences), reduced to the least cosine."""
    r = dynamic_cpu_vs_ort(mcc, model, work, n)
    outs = r.get("report", {}).get("outputs", [])
    return {"exit": r["exit"], "least_cosine": min((o["min_cosine"] for o in outs), default=None)}


def mcc_weight_only(a, work, samples, name, flags):
    out = os.path.join(work, name + ".onnx")
    t0 = time.perf_counter()
    run([a.mcc, "quantize", a.model, "-o", out, "--mode", "weight_only", "--block-size", str(a.block_size),
         "--no-check"] + flags)
    secs = time.perf_counter() - t0
    if "matmul_nbits" not in flags:
        onnx.checker.check_model(out, full_check=True)
    res = measure(out, samples)
    res["flags"] = " ".join(flags)
    res["quantize_s"] = round(secs, 2)
    sidecar = os.path.splitext(out)[0] + ".mcc.json"
    state = json.load(open(sidecar))
    q = [s for s in state["stages"] if s["pass"] == "quantize"][0]
    if "gptq" in q["record"]:
        ratios = [x["ratio"] for x in q["record"]["gptq"]["losses"]]
        res["gptq_proxy_loss_ratio_mean"] = float(np.mean(ratios))
    res["sidecar_bytes"] = os.path.getsize(sidecar)
    replay = os.path.join(work, name + "_replay.onnx")
    run([a.mcc, "quantize", a.model, "-o", replay, "--state", sidecar])
    res["replay_identical"] = open(out, "rb").read() == open(replay, "rb").read()
    if a.cpu_samples > 0:
        res["cpu_vs_ort"] = cpu_vs_ort(a.mcc, out, work, a.cpu_samples)
    return res


class CalibReader:
    """ONNX Runtime's CalibrationDataReader over the calibration sample folders."""

    def __init__(self):
        self.items = [{k: np.load(os.path.join(CALIB, d, k + ".npy")) for k in INPUTS}
                      for d in sorted(os.listdir(CALIB)) if os.path.isdir(os.path.join(CALIB, d))]
        self.i = 0

    def get_next(self):
        if self.i >= len(self.items):
            return None
        self.i += 1
        return self.items[self.i - 1]

    def rewind(self):
        self.i = 0

    def __iter__(self):  # neural-compressor's GPTQ (behind ONNX Runtime's) iterates over the reader
        return iter(self.items)


def ort_nbits(a, work, samples, name, config_fn):
    try:
        from onnxruntime.quantization import matmul_nbits_quantizer as mnq
        cfg = config_fn(mnq)
        q = mnq.MatMulNBitsQuantizer(onnx.load(a.model), block_size=a.block_size, is_symmetric=True, algo_config=cfg)
        t0 = time.perf_counter()
        q.process()
        secs = time.perf_counter() - t0
        out = os.path.join(work, name + ".onnx")
        q.model.save_model_to_file(out, use_external_data_format=False)
    except Exception as e:  # noqa: BLE001 - reported in the table, not fatal
        return f"failed: {type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"
    res = measure(out, samples)
    res["quantize_s"] = round(secs, 2)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="/work/minilm/minilm_l6_v2.onnx")
    ap.add_argument("--mcc", default=os.path.join(ROOT, "build", "mcc"))
    ap.add_argument("--work", default=None)
    ap.add_argument("--block-size", type=int, default=32)
    ap.add_argument("--cpu-samples", type=int, default=4)
    ap.add_argument("--ort-only", action="store_true")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    work = minilm_work_dir(a, "transformer_weight_only_")
    samples = heldout_samples(work, tokenizer_json(a.model), a.model)
    results = {"heldout_sentences": len(samples), "calibration": CALIB, "block_size": a.block_size,
               "fp32": measure(a.model, samples)}
    if not a.ort_only:
        mcc_rows(a, work, samples, results)
    ort_rows(a, work, samples, results)
    print_results(a, samples, results)


def mcc_rows(a, work, samples, results):
    # Tables float (--no-embeddings) where ONNX Runtime's rows, which leave them float, are the comparison.
    results["mcc_rtn"] = mcc_weight_only(a, work, samples, "mcc_rtn", ["--no-embeddings"])
    results["mcc_gptq"] = mcc_weight_only(a, work, samples, "mcc_gptq",
                                          ["--algorithm", "gptq", "--calib", CALIB, "--no-embeddings"])
    results["mcc_gptq_nbits"] = mcc_weight_only(
        a, work, samples, "mcc_gptq_nbits",
        ["--algorithm", "gptq", "--calib", CALIB, "--weight-format", "matmul_nbits", "--no-embeddings"])
    results["mcc_rtn_nbits"] = mcc_weight_only(a, work, samples, "mcc_rtn_nbits",
                                               ["--weight-format", "matmul_nbits", "--no-embeddings"])
    results["mcc_gptq_embeddings"] = mcc_weight_only(a, work, samples, "mcc_gptq_emb",
                                                     ["--algorithm", "gptq", "--calib", CALIB, "--embeddings"])


def ort_rows(a, work, samples, results):
    results["ort_default"] = ort_nbits(a, work, samples, "ort_default",
                                       lambda m: m.DefaultWeightOnlyQuantConfig(block_size=a.block_size, is_symmetric=True))
    results["ort_rtn"] = ort_nbits(a, work, samples, "ort_rtn", lambda m: m.RTNWeightOnlyQuantConfig())
    results["ort_gptq"] = ort_nbits(a, work, samples, "ort_gptq",
                                    lambda m: m.GPTQWeightOnlyQuantConfig(calibration_data_reader=CalibReader(),
                                                                          block_size=a.block_size))


def print_results(a, samples, results):
    rows = []
    for k, v in results.items():
        if not isinstance(v, dict) or k == "calibration":
            continue
        rows.append([k, f"{v['bytes'] / 1e6:.2f}", f"{v['cosine_mean']:.5f}", f"{v['cosine_min']:.5f}",
                     f"{v['hidden_max_abs_diff']:.4f}", f"{v['ort_ms']:.2f}", str(v.get("replay_identical", "")),
                     str(v.get("cpu_vs_ort", {}).get("least_cosine", ""))])
    for k, v in results.items():
        if isinstance(v, str) and k.startswith("ort_"):
            rows.append([k, v, "", "", "", "", "", ""])
    print_table(f"MiniLM-L6 weight-only int4, block {a.block_size}, {len(samples)} held-out sentences "
                "(calibrated on the 64 shared samples)",
                ["model", "MB", "cos mean", "cos min", "hidden max|d|", "ORT ms (1 thr)", "replay", "mcc cpu vs ORT"], rows)
    emit_json(results, a.json, indent=1)


if __name__ == "__main__":
    main()
