#!/usr/bin/env python3
"""Regenerates golden/<case>/ inputs and expected outputs with ONNX Runtime (never with mcc).

Each case folder holds model.onnx and NumPy sample folders <sample>/<input name>.npy with the
expected outputs as <sample>/output_K.npy. Inputs are deterministic (seeded or taken from
../shared/data); run from anywhere:  python3 golden/make_golden.py [--shared ../shared]
Needs numpy and onnxruntime (pip).
"""
import argparse
import os
import shutil

import numpy as np
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))


def run_ort(model, feeds):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def write_case(case, model_src, samples):
    d = os.path.join(HERE, case)
    os.makedirs(d, exist_ok=True)
    model = os.path.join(d, "model.onnx")
    if model_src and os.path.abspath(model_src) != os.path.abspath(model):
        shutil.copyfile(model_src, model)
    # Only golden sample folders (tensors directly inside) are replaced; other folders, such as
    # mnist/calib and mnist/eval from make_mnist_samples.py, are kept.
    for name in sorted(os.listdir(d)):
        p = os.path.join(d, name)
        if os.path.isdir(p) and any(f.endswith(".npy") for f in os.listdir(p)):
            shutil.rmtree(p)
    for name, feeds in samples:
        s = os.path.join(d, name)
        os.makedirs(s)
        for k, v in feeds.items():
            np.save(os.path.join(s, k + ".npy"), v)
        for i, out in enumerate(run_ort(model, feeds)):
            np.save(os.path.join(s, "output_%d.npy" % i), out)
    print("%s: %d sample(s)" % (case, len(samples)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default=os.path.join(HERE, "..", "..", "shared"))
    a = ap.parse_args()
    models = os.path.join(a.shared, "models")

    # MNIST: three real digits from ../shared/data/mnist (the first three of x.npy).
    x = np.load(os.path.join(a.shared, "data", "mnist", "x.npy"))
    write_case("mnist", None, [("digit_%d" % i, {"Input3": x[i:i + 1].astype(np.float32)}) for i in range(3)])

    # Silero VAD: two seeded 512-sample chunks (a tone in noise, and noise), zero LSTM state.
    rng = np.random.default_rng(7)
    t = np.arange(512) / 16000.0
    chunks = [0.3 * np.sin(2 * np.pi * 440 * t) + 0.01 * rng.standard_normal(512), 0.02 * rng.standard_normal(512)]
    write_case("silero_vad", os.path.join(models, "silero_vad_legacy.onnx"), [
        ("chunk_%d" % i, {"input": c[None].astype(np.float32), "sr": np.array(16000, np.int64),
                          "h": np.zeros((2, 1, 64), np.float32), "c": np.zeros((2, 1, 64), np.float32)})
        for i, c in enumerate(chunks)])

    # YOLOX-nano: one synthetic letterboxed image (smooth gradients and shapes, pad 114, 0..255).
    yy, xx = np.mgrid[0:416, 0:416].astype(np.float32)
    img = np.full((3, 416, 416), 114, np.float32)
    img[0, :312] = (xx[:312] * 0.6) % 256
    img[1, :312] = (yy[:312] * 0.8) % 256
    img[2, :312] = ((xx[:312] + yy[:312]) * 0.3) % 256
    img[:, 100:200, 150:300] = 230.0
    write_case("yolox_nano", os.path.join(models, "yolox_nano.onnx"), [("synthetic_0", {"images": img[None]})])


if __name__ == "__main__":
    main()
