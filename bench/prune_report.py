#!/usr/bin/env python3
"""What the prune stage buys, measured with `mcc convert` and checked in ONNX Runtime.

MobileNetV2 (../shared/models/mobilenet_v2_random_bn_opset13.onnx):
  - prune{mode=channel sparsity=0.3}: parameters and FLOPs before/after (FLOPs from the shapes that
    ONNX shape inference gives: 2 * MACs of Conv/Gemm/MatMul), the pruned model passes the ONNX checker
    and runs in ONNX Runtime, latency before/after under ONNX Runtime and under `mcc bench`
    (same thread count, runs alternated, medians) and the ratio;
  - the same with round_to=8 (kept channels a multiple of 8: ONNX Runtime's blocked NCHWc kernels);
  - fold,prune{mode=channel sparsity=0.3}: the same after BatchNormalization folding;
  - prune{sparsity=0.5}: per-layer sparsity as `mcc inspect --json` shows it.
MNIST (../shared/models/mnist.onnx, ../shared/data/mnist): fold,prune{sparsity=0.5}, top-1 on the
10,000 digits under ONNX Runtime before and after.

usage: bench/prune_report.py [--mcc build/mcc] [--threads 2] [--runs 30] [--json FILE]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx

from common import emit_json
import onnxruntime as ort
from onnx import numpy_helper, shape_inference

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(ROOT, "..", "shared")


def mcc(args, exe):
    r = subprocess.run([exe] + args, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"mcc {' '.join(args)} failed ({r.returncode}): {r.stderr.strip()}")
    return r.stdout


def params(model):
    return sum(int(np.prod(t.dims)) for t in model.graph.initializer)


def flops(model):
    m = shape_inference.infer_shapes(model)
    shapes = {}
    for v in list(m.graph.value_info) + list(m.graph.input) + list(m.graph.output):
        shapes[v.name] = [d.dim_value for d in v.type.tensor_type.shape.dim]
    for t in m.graph.initializer:
        shapes[t.name] = list(t.dims)
    total = 0
    for n in m.graph.node:
        if n.op_type == "Conv":
            w, y = shapes[n.input[1]], shapes[n.output[0]]
            total += 2 * int(np.prod(y)) * int(np.prod(w[1:]))  # every output: Cin/group * k*k MACs
        elif n.op_type == "Gemm":
            a, y = shapes[n.input[0]], shapes[n.output[0]]
            k = a[0] if any(x.name == "transA" and x.i for x in n.attribute) else a[1]
            total += 2 * int(np.prod(y)) * k
        elif n.op_type == "MatMul":
            a, y = shapes[n.input[0]], shapes[n.output[0]]
            total += 2 * int(np.prod(y)) * a[-1]
    return total


def session(path, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def run_once(path, x):
    s = session(path, 1)
    return list(s.run(None, {s.get_inputs()[0].name: x})[0].shape)


def ort_latency(path, threads, runs):
    s = session(path, threads)
    i = s.get_inputs()[0]
    x = np.random.default_rng(0).random([d if isinstance(d, int) else 1 for d in i.shape]).astype(np.float32)
    for _ in range(3):
        s.run(None, {i.name: x})
    t = []
    for _ in range(runs):
        t0 = time.perf_counter()
        s.run(None, {i.name: x})
        t.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(t)


def mcc_latency(path, threads, runs, exe):
    return json.loads(mcc(["bench", path, "--threads", str(threads), "--runs", str(runs), "--json"], exe))["median_ms"]


def mobilenet(exe, threads, runs, tmp):
    src = os.path.join(SHARED, "models", "mobilenet_v2_random_bn_opset13.onnx")
    out = {}
    base = onnx.load(src)
    out["params_before"], out["flops_before"] = params(base), flops(base)
    for tag, spec in (("channel", "prune{mode=channel sparsity=0.3}"),
                      ("channel_round8", "prune{mode=channel sparsity=0.3 round_to=8}"),
                      ("fold_channel", "fold,prune{mode=channel sparsity=0.3}")):
        dst = os.path.join(tmp, f"mb_{tag}.onnx")
        mcc(["convert", src, "-o", dst, "-p", spec, "-q"], exe)
        m = onnx.load(dst)
        onnx.checker.check_model(m)
        shape_inference.infer_shapes(m, check_type=True, strict_mode=True)
        st = json.load(open(dst[:-5] + ".mcc.json"))
        stage = [s for s in st["stages"] if s["pass"] == "prune"][0]
        r = {"spec": spec, "params_after": params(m), "flops_after": flops(m), "stats": stage["stats"],
             "blocked": [g["producers"][0] + ": " + g["blocked"] for g in stage["record"]["groups"] if "blocked" in g]}
        x = np.random.default_rng(1).random((1, 3, 224, 224)).astype(np.float32)
        r["ort_output_shape"] = run_once(dst, x)
        if tag != "fold_channel":
            lat = {"ort_before": [], "ort_after": [], "mcc_before": [], "mcc_after": []}
            for _ in range(3):  # alternate the runtimes and models in rounds
                lat["ort_before"].append(ort_latency(src, threads, runs))
                lat["ort_after"].append(ort_latency(dst, threads, runs))
                lat["mcc_before"].append(mcc_latency(src, threads, runs, exe))
                lat["mcc_after"].append(mcc_latency(dst, threads, runs, exe))
            r["latency_ms"] = {k: statistics.median(v) for k, v in lat.items()}
            r["latency_ms"]["ort_speedup"] = r["latency_ms"]["ort_before"] / r["latency_ms"]["ort_after"]
            r["latency_ms"]["mcc_speedup"] = r["latency_ms"]["mcc_before"] / r["latency_ms"]["mcc_after"]
        out[tag] = r
    dst = os.path.join(tmp, "mb_unstructured.onnx")
    mcc(["convert", src, "-o", dst, "-p", "prune{sparsity=0.5}", "-q"], exe)
    layers = json.loads(mcc(["inspect", dst, "--json"], exe))["layers"]
    sp = [l["sparsity"] for l in layers]
    out["unstructured"] = {"layers": len(layers), "min_sparsity": min(sp), "max_sparsity": max(sp),
                           "mean_sparsity": statistics.mean(sp),
                           "ort_output_shape": run_once(dst, np.zeros((1, 3, 224, 224), np.float32))}
    return out


def mnist_top1(path, x, y):
    s = session(path, 1)
    name = s.get_inputs()[0].name
    hits = 0
    for i in range(len(x)):
        hits += int(np.argmax(s.run(None, {name: x[i:i + 1]})[0]) == y[i])
    return hits / len(x)


def mnist(exe, tmp):
    src = os.path.join(SHARED, "models", "mnist.onnx")
    x = np.load(os.path.join(SHARED, "data", "mnist", "x.npy")).astype(np.float32)
    y = np.load(os.path.join(SHARED, "data", "mnist", "y.npy"))
    out = {"top1_before": mnist_top1(src, x, y)}
    dst = os.path.join(tmp, "mnist_pruned.onnx")
    mcc(["convert", src, "-o", dst, "-p", "fold,prune{sparsity=0.5}", "-q"], exe)
    layers = json.loads(mcc(["inspect", dst, "--json"], exe))["layers"]
    out["layers"] = {l["name"]: round(l["sparsity"], 4) for l in layers}
    out["top1_after"] = mnist_top1(dst, x, y)
    out["top1_change_points"] = 100 * (out["top1_after"] - out["top1_before"])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mcc", default=os.path.join(ROOT, "build", "mcc"))
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rep = {"threads": a.threads, "mobilenet_v2": mobilenet(a.mcc, a.threads, a.runs, tmp), "mnist": mnist(a.mcc, tmp)}
    emit_json(rep, a.json)


if __name__ == "__main__":
    main()
