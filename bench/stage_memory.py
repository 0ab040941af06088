#!/usr/bin/env python3
"""Peak memory of each pipeline stage on a model larger than 2 GB with external data.

Builds (once, in --dir) an MLP whose weights live in an external data file: --layers MatMul
layers of --dim x --dim float32 weights (default 9 x 8192^2 = 2.4 GB). Every other layer reads its
weight through a Transpose, so fold has real constant work on large tensors. Then runs, one at a
time, `mcc convert -p fold`, `-p fp16`, `-p prune` (after fold), `mcc quantize` with a calibration
folder, and the plain round trip; then fp16, prune and quantize on a second model made of one
1 GiB tensor (--single-dim), where memory can only be saved inside the tensor. Reports for each the peak RSS of the mcc process (wait4's
ru_maxrss), the input and output sizes (model file + external data) and the ratio
peak RSS / max(input, output).

  python3 bench/stage_memory.py --mcc build/mcc --dir /tmp/mcc_big
"""
import argparse
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import print_table  # noqa: E402


def build_model(d, layers, dim, batch, name="big"):
    from onnx import TensorProto, helper

    model_path = os.path.join(d, name + ".onnx")
    if os.path.exists(model_path):
        return model_path
    data_name = name + ".onnx.data"
    rng = np.random.default_rng(7)
    nodes, inits = [], []
    offset = 0
    with open(os.path.join(d, data_name), "wb") as f:
        for i in range(layers):
            w = (rng.standard_normal((dim, dim), dtype=np.float32) * (1.0 / np.sqrt(dim))).astype(np.float32)
            t = TensorProto(name=f"w{i}", data_type=TensorProto.FLOAT, dims=[dim, dim])
            t.data_location = TensorProto.EXTERNAL
            for k, v in (("location", data_name), ("offset", str(offset)), ("length", str(w.nbytes))):
                e = t.external_data.add()
                e.key, e.value = k, v
            f.write(w.tobytes())
            offset += w.nbytes
            inits.append(t)
            src = f"h{i}"
            weight = f"w{i}"
            if i % 2 == 1:  # a weight read through Transpose: fold computes it once
                nodes.append(helper.make_node("Transpose", [weight], [f"wt{i}"], name=f"transpose{i}"))
                weight = f"wt{i}"
            nodes.append(helper.make_node("MatMul", [src, weight], [f"m{i}"], name=f"matmul{i}"))
            out = f"h{i + 1}" if i + 1 < layers else "y"
            nodes.append(helper.make_node("Relu", [f"m{i}"], [out], name=f"relu{i}"))
    for n in nodes:  # the first layer reads x
        n.input[:] = ["x" if v == "h0" else v for v in n.input]
    g = helper.make_graph(nodes, "big_mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, dim])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, dim])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="stage_memory")
    with open(model_path, "wb") as f:
        f.write(m.SerializeToString())
    calib = os.path.join(d, "calib_" + name)
    for s in range(4):
        os.makedirs(os.path.join(calib, f"s{s}"), exist_ok=True)
        np.save(os.path.join(calib, f"s{s}", "x.npy"), rng.standard_normal((batch, dim), dtype=np.float32))
    return model_path


def model_bytes(path):
    """Model file plus every file next to it whose name starts with the model's name (its data)."""
    d, base = os.path.dirname(path) or ".", os.path.basename(path)
    return sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d) if f.startswith(base))


def peak_rss(cmd):
    """Runs cmd; returns (peak RSS in bytes, seconds). Exits on failure."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    secs = time.perf_counter() - t0
    err = p.stderr.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{err}")
    return usage.ru_maxrss * 1024, secs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mcc", default="build/mcc")
    ap.add_argument("--dir", default="/tmp/mcc_stage_memory")
    ap.add_argument("--layers", type=int, default=9)
    ap.add_argument("--dim", type=int, default=8192)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--single-dim", type=int, default=16384, help="the one-tensor model: dim x dim f32 (1 GiB)")
    ap.add_argument("--build-only", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--only", default="", help="comma-separated subset of: roundtrip,fold,fp16,prune,quantize,fp16-single,prune-single,quantize-single")
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    if a.build_only:
        build_model(a.dir, a.layers, a.dim, a.batch)
        # One tensor holding the whole model: streaming must happen inside the tensor.
        build_model(a.dir, 1, a.single_dim, a.batch, name="single")
        return
    # The models are made by a child process: a child's peak RSS counts what it inherited from
    # its parent before exec, so this process must stay small.
    subprocess.run([sys.executable, __file__, "--build-only", "--dir", a.dir, "--layers", str(a.layers), "--dim",
                    str(a.dim), "--batch", str(a.batch), "--single-dim", str(a.single_dim)], check=True)
    src, single = os.path.join(a.dir, "big.onnx"), os.path.join(a.dir, "single.onnx")
    fold = "fold{constant_size_limit=4294967296}"  # fold the 268 MB Transposes too
    out = lambda name: os.path.join(a.dir, "out", name)  # noqa: E731
    os.makedirs(os.path.join(a.dir, "out"), exist_ok=True)
    runs = [
        ("roundtrip", [a.mcc, "convert", src, "-o", out("roundtrip.onnx"), "-q"]),
        ("fold", [a.mcc, "convert", src, "-o", out("fold.onnx"), "-p", fold, "-q"]),
        ("fp16", [a.mcc, "convert", src, "-o", out("fp16.onnx"), "-p", "fp16", "-q"]),
        ("prune", [a.mcc, "convert", src, "-o", out("prune.onnx"), "-p", fold + ",prune", "-q"]),
        ("quantize", [a.mcc, "quantize", src, "-o", out("quantize.onnx"), "--calib",
                      os.path.join(a.dir, "calib_big"), "-q"]),
        ("fp16-single", [a.mcc, "convert", single, "-o", out("fp16-single.onnx"), "-p", "fp16", "-q"]),
        ("prune-single", [a.mcc, "convert", single, "-o", out("prune-single.onnx"), "-p", "prune", "-q"]),
        ("quantize-single", [a.mcc, "quantize", single, "-o", out("quantize-single.onnx"), "--calib",
                             os.path.join(a.dir, "calib_single"), "-q"]),
    ]
    only = set(filter(None, a.only.split(",")))
    rows = []
    for name, cmd in runs:
        if only and name not in only:
            continue
        for f in os.listdir(os.path.join(a.dir, "out")):
            if f.startswith(name + "."):
                os.remove(os.path.join(a.dir, "out", f))
        peak, secs = peak_rss(cmd)
        ib = model_bytes(single if name.endswith("-single") else src)
        ob = model_bytes(out(name + ".onnx"))
        rows.append([name, f"{ib / 2**30:.2f}", f"{ob / 2**30:.2f}", f"{peak / 2**30:.2f}",
                     f"{peak / max(ib, ob):.2f}", f"{secs:.1f}"])
    print_table(f"peak RSS per stage: {a.layers} x MatMul {a.dim}x{a.dim} f32 with external data; "
                f"*-single: one MatMul {a.single_dim}x{a.single_dim} f32",
                ["stage", "in GiB", "out GiB", "peak RSS GiB", "peak / max(in,out)", "seconds"], rows)


if __name__ == "__main__":
    main()
