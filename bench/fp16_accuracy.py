#!/usr/bin/env python3
"""End-to-end accuracy of the fp16 stage (float16 and bfloat16), measured with ONNX Runtime as
the independent reference (mcc's own outputs are never the golden).

  MNIST (../shared/models/mnist.onnx, 10,000 labelled digits in ../shared/data/mnist):
      top-1 agreement of the converted model with fp32, and both models' accuracy.
  YOLOX-nano (../shared/models/yolox_nano.onnx, COCO photos in ../shared/data/coco):
      cosine similarity of the whole output tensor against fp32, per image (min and mean).

Each converted model is made with `mcc convert -p 'fp16{...}'`, must pass
onnx.checker.check_model(full_check=True) (which runs shape inference) and load in ONNX
Runtime. bfloat16 needs opset >= 13, so for bf16 the fp32 model is first moved to opset 17 with
onnx.version_converter (the fp32 reference is that same opset-17 model). ONNX Runtime's CPU
provider has no bfloat16 kernels for most ops; when a bf16 model does not load there, its
outputs come from mcc's cpu backend (`mcc eval --save-outputs`), still compared with the fp32
model run in ONNX Runtime.

usage: bench/fp16_accuracy.py [--mcc build/mcc] [--images N] [--digits N] [--work DIR] [--json FILE]
Exit status 1 when a bar fails (MNIST fp16 agreement >= 99.8 %, YOLOX fp16 cosine >= 0.999).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import version_converter

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SHARED = os.path.join(ROOT, "..", "shared")


def convert(mcc, src, dst, spec):
    r = subprocess.run([mcc, "convert", src, "-o", dst, "-p", spec, "--json"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"mcc convert {src} -p '{spec}' failed ({r.returncode}): {r.stderr.strip()}")
    state = json.loads(r.stdout) if r.stdout.strip().startswith("{") else {}
    m = onnx.load(dst)
    onnx.checker.check_model(m, full_check=True)  # raises on any type or shape inference error
    return state


def stage_stats(state):
    for s in state.get("stages", []):
        if s.get("pass") == "fp16" or s.get("name") == "fp16":
            return s.get("stats", {})
    return {}


def session(path):
    return ort.InferenceSession(path, providers=["CPUExecutionProvider"])


def try_session(path):
    try:
        return session(path), ""
    except Exception as e:  # ORT lacks bf16 kernels for most ops on CPU
        return None, str(e).splitlines()[0][:200]


def run_ort(sess, feeds_list):
    name = sess.get_inputs()[0].name
    return [sess.run(None, {name: x})[0] for x in feeds_list]


def run_mcc(mcc, model, input_name, xs, work):
    """Outputs of mcc's cpu backend for each sample (NumPy sample folders, --save-outputs)."""
    ins, outs = os.path.join(work, "in"), os.path.join(work, "out")
    shutil.rmtree(ins, ignore_errors=True)
    shutil.rmtree(outs, ignore_errors=True)
    names = []
    for i, x in enumerate(xs):
        d = os.path.join(ins, f"s{i:05d}")
        os.makedirs(d)
        np.save(os.path.join(d, input_name + ".npy"), x)
        names.append(f"s{i:05d}")
    r = subprocess.run([mcc, "eval", model, "--inputs", ins, "--save-outputs", outs, "-q"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"mcc eval {model} failed ({r.returncode}): {r.stderr.strip()}")
    return [np.load(os.path.join(outs, n, "output_0.npy")) for n in names]


def to_opset17(src, dst):
    m = onnx.load(src)
    m = version_converter.convert_version(m, 17)
    onnx.save(m, dst)


def convert_and_run(args, work, tag, src, dtype, xs, input_name=None):
    """Converts src to dtype (bf16 from a copy raised to opset 17) and runs the reference and the
    converted model on xs, the latter under onnxruntime where it loads and under mcc otherwise.
    Returns (reference outputs, converted outputs, runtime, stage state, loads in onnxruntime)."""
    ref = src
    if dtype == "bf16":
        ref = os.path.join(work, f"{tag}.opset17.onnx")
        to_opset17(src, ref)
    out = os.path.join(work, f"{tag}.{dtype}.onnx")
    state = convert(args.mcc, ref, out, f"fp16{{dtype={dtype}}}")
    ref_sess = session(ref)
    base = run_ort(ref_sess, xs)
    sess, why = try_session(out)
    if sess is not None:
        return base, run_ort(sess, xs), "onnxruntime", state, True
    name = input_name or ref_sess.get_inputs()[0].name
    low = run_mcc(args.mcc, out, name, xs, work)
    return base, low, "mcc cpu (onnxruntime: " + why + ")", state, False


def mnist(args, work, dtype):
    src = os.path.join(SHARED, "models", "mnist.onnx")
    x = np.load(os.path.join(SHARED, "data", "mnist", "x.npy"))[: args.digits]
    y = np.load(os.path.join(SHARED, "data", "mnist", "y.npy"))[: args.digits]
    xs = [x[i : i + 1] for i in range(len(x))]
    base, low, runtime, state, in_ort = convert_and_run(args, work, "mnist", src, dtype, xs)
    base, low = np.concatenate(base), np.concatenate(low)
    p32, plow = base.argmax(1), low.astype(np.float32).argmax(1)
    return {
        "model": "mnist", "dtype": dtype, "samples": int(len(x)), "runtime": runtime,
        "top1_agreement": float((p32 == plow).mean()),
        "accuracy_fp32": float((p32 == y).mean()), "accuracy_low": float((plow == y).mean()),
        "loads_in_ort": in_ort, "stats": stage_stats(state),
    }


def yolox(args, work, dtype):
    src = os.path.join(SHARED, "models", "yolox_nano.onnx")
    samples = os.path.join(work, "coco")
    if not os.path.isdir(samples):
        subprocess.run([sys.executable, os.path.join(SHARED, "tools", "coco_to_yolox_samples.py"), samples,
                        str(args.images)], check=True, capture_output=True)
    ids = sorted(os.listdir(samples))[: args.images]
    xs = [np.load(os.path.join(samples, i, "images.npy")) for i in ids]
    base, low, runtime, state, in_ort = convert_and_run(args, work, "yolox", src, dtype, xs, "images")
    cos = []
    for a, b in zip(base, low):
        a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
        cos.append(float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b))))
    return {
        "model": "yolox_nano", "dtype": dtype, "images": len(xs), "runtime": runtime,
        "cosine_min": min(cos), "cosine_mean": float(np.mean(cos)),
        "loads_in_ort": in_ort, "stats": stage_stats(state),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mcc", default=os.path.join(ROOT, "build", "mcc"))
    ap.add_argument("--digits", type=int, default=10000)
    ap.add_argument("--images", type=int, default=100)
    ap.add_argument("--work", default="")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="mcc-fp16-")
    os.makedirs(work, exist_ok=True)

    results = []
    for dtype in ("fp16", "bf16"):
        results.append(mnist(args, work, dtype))
        results.append(yolox(args, work, dtype))
    ok = True
    for r in results:
        if r["model"] == "mnist":
            line = (f"mnist {r['dtype']}: top-1 agreement {100 * r['top1_agreement']:.2f}% on {r['samples']} digits "
                    f"(accuracy fp32 {100 * r['accuracy_fp32']:.2f}%, {r['dtype']} {100 * r['accuracy_low']:.2f}%)")
            if r["dtype"] == "fp16" and r["top1_agreement"] < 0.998:
                ok = False
        else:
            line = (f"yolox_nano {r['dtype']}: output cosine min {r['cosine_min']:.6f} mean {r['cosine_mean']:.6f} "
                    f"on {r['images']} COCO images")
            if r["dtype"] == "fp16" and r["cosine_min"] < 0.999:
                ok = False
        st = r["stats"]
        print(f"{line}; {st.get('nodes_low', '?')} nodes low, {st.get('nodes_fp32', '?')} fp32, "
              f"{st.get('casts_inserted', '?')} casts; run on {r['runtime']}; checker full_check ok")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
