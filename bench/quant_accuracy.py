#!/usr/bin/env python3
"""INT8 accuracy of `mcc quantize` on real models, measured under ONNX Runtime (the independent
runtime: mcc's own executor is never the judge here). Prints one table.

  MNIST       calibrate on every 100th digit of ../shared/data/mnist (100 digits; the file is sorted by
              class), evaluate top-1 on all 10,000 (fp32 vs int8, both under ORT); bar: int8 within
              0.1 points of fp32.
  YOLOX-nano  calibrate on 20 COCO photos, evaluate on 40 others: output cosine vs fp32; bar: mean >= 0.99.
Each run is `mcc quantize` with its defaults plus --quant-flags: it judges itself on held-back
calibration samples and escalates while its budget is unmet; the table shows the accepted
configuration (method), the steps rejected and the self-check's figure from the sidecar.
  MobileNetV2 (random weights) calibrate on 20 COCO-derived 224x224 inputs, evaluate on 20 others:
              SNR and cosine of the logits, top-1 agreement with fp32 (no bar: reported).
  Silero VAD  calibrate on 20 sine/noise chunks (512 samples, sr 16000), evaluate on 20 others:
              SNR per output (output, hn, cn) (no bar: reported).

usage: bench/quant_accuracy.py [--mcc build/mcc] [--shared ../shared] [--work DIR]
                               [--models mnist,yolox,mobilenet,silero] [--threads N] [--per-layer]
                               [--quant-flags '--method auto --mixed-target 0.99']
--per-layer also runs `mcc eval --per-layer` on the YOLOX int8 model and prints its table.
Needs: numpy, onnxruntime, pillow (for the COCO photos).
"""
import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort

from common import print_table, run

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def session(path, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def metrics(got, want):
    g, w = got.astype(np.float64).ravel(), want.astype(np.float64).ravel()
    noise = float(np.sum((g - w) ** 2))
    sig = float(np.sum(w ** 2))
    snr = float("inf") if noise == 0 else 10 * np.log10(sig / noise) if sig > 0 else float("-inf")
    ng, nw = np.linalg.norm(g), np.linalg.norm(w)
    cos = 1.0 if ng == 0 and nw == 0 else (0.0 if ng == 0 or nw == 0 else float(g @ w / (ng * nw)))
    return snr, cos, sig, noise


def save_samples(root, samples):
    """samples: list of (name, {input name: array}) -> NumPy sample folders."""
    os.makedirs(root, exist_ok=True)
    for name, feeds in samples:
        d = os.path.join(root, name)
        os.makedirs(d, exist_ok=True)
        for k, v in feeds.items():
            np.save(os.path.join(d, k + ".npy"), v)


def load_samples(root):
    out = []
    for d in sorted(os.listdir(root)):
        feeds = {os.path.splitext(f)[0]: np.load(os.path.join(root, d, f)) for f in sorted(os.listdir(os.path.join(root, d)))}
        out.append((d, feeds))
    return out


def quantize(args, model, out, calib, extra=()):
    cmd = [args.mcc, "quantize", model, "-o", out, "--calib", calib, "--threads", str(args.threads), *extra,
           *args.quant_flags.split()]
    _, secs = run(cmd)
    return secs


def decisions(q):
    """(accepted method, steps rejected, self-check figures) from the sidecar of an `mcc quantize` output."""
    import json
    state = json.load(open(os.path.splitext(q)[0] + ".mcc.json"))
    method = [s for s in state["stages"] if s["pass"] == "quantize"][0]["options"]["method"]
    checks = "; ".join(f"{c['metric']} {c['value']} ({c['verdict']}, {c['samples']} held back)" for c in state.get("checks", [])
                       if c.get("metric") != "none")
    return method, len(state.get("escalation", [])), checks or "no check"


def compare_outputs(fp32, int8, samples, threads):
    """Per output name: pooled SNR (power summed over samples), worst-sample SNR, mean/min cosine."""
    a, b = session(fp32, threads), session(int8, threads)
    names = [o.name for o in a.get_outputs()]
    acc = {n: {"sig": 0.0, "noise": 0.0, "snrs": [], "coss": []} for n in names}
    agree = []
    for _, feeds in samples:
        ra = a.run(None, feeds)
        rb = b.run(None, feeds)
        for n, x, y in zip(names, rb, ra):
            snr, cos, sig, noise = metrics(x, y)
            acc[n]["sig"] += sig
            acc[n]["noise"] += noise
            acc[n]["snrs"].append(snr)
            acc[n]["coss"].append(cos)
        if ra[0].ndim == 2 and ra[0].shape[-1] > 1:
            agree.append(int(np.argmax(ra[0], -1)[0] == np.argmax(rb[0], -1)[0]))
    res = {}
    for n in names:
        s = acc[n]
        pooled = float("inf") if s["noise"] == 0 else 10 * np.log10(s["sig"] / s["noise"])
        res[n] = dict(snr=pooled, worst_snr=min(s["snrs"]), mean_cos=float(np.mean(s["coss"])), min_cos=min(s["coss"]))
    return res, (float(np.mean(agree)) if agree else None)


def quantize_and_compare(args, work, tag, model, samples, n_calib):
    """Calibrates on the first n_calib samples, evaluates on the rest: (compare_outputs..., seconds)."""
    calib, ev = os.path.join(work, f"{tag}_calib"), os.path.join(work, f"{tag}_eval")
    save_samples(calib, samples[:n_calib])
    save_samples(ev, samples[n_calib:])
    q = os.path.join(work, f"{tag}.int8.onnx")
    secs = quantize(args, model, q, calib)
    res, agree = compare_outputs(model, q, load_samples(ev), args.threads)
    return res, agree, secs


def mnist(args, work, rows):
    x = np.load(os.path.join(args.shared, "data", "mnist", "x.npy"))
    y = np.load(os.path.join(args.shared, "data", "mnist", "y.npy"))
    model = os.path.join(args.shared, "models", "mnist.onnx")
    calib = os.path.join(work, "mnist_calib")
    save_samples(calib, [(f"d{i:05d}", {"Input3": x[i:i + 1]}) for i in range(0, 10000, 100)])
    q = os.path.join(work, "mnist.int8.onnx")
    secs = quantize(args, model, q, calib)
    tops = {}
    for tag, path in (("fp32", model), ("int8", q)):
        s = session(path, args.threads)
        inp = s.get_inputs()[0].name
        pred = np.array([np.argmax(s.run(None, {inp: x[i:i + 1]})[0]) for i in range(len(x))])
        tops[tag] = 100.0 * float(np.mean(pred == y))
    drop = tops["fp32"] - tops["int8"]
    rows.append(("MNIST", "top-1 fp32 / int8 (10,000 digits)", f"{tops['fp32']:.2f} % / {tops['int8']:.2f} %",
                 "drop <= 0.1 pt", f"drop {drop:.2f} pt", "met" if drop <= 0.1 else "NOT met"))
    add_decision_rows(rows, "MNIST", q, secs, "100 digits")


def add_decision_rows(rows, tag, q, secs, data):
    method, rejected, checks = decisions(q)
    rows.append((tag, f"mcc quantize ({data}): wall time, accepted method, steps rejected",
                 f"{secs:.2f} s, {method}, {rejected}", "", "", ""))
    rows.append((tag, "self-check in the sidecar", checks, "", "", ""))


def coco_samples(args, work, n_calib, n_eval):
    """YOLOX samples from the first n_calib + n_eval COCO photos (sorted): calib folder, eval folder."""
    alld = os.path.join(work, "coco_yolox_all")
    if not os.path.isdir(alld):
        run([sys.executable, os.path.join(args.shared, "tools", "coco_to_yolox_samples.py"), alld, str(n_calib + n_eval)])
    names = sorted(os.listdir(alld))
    calib, ev = os.path.join(work, f"yolox_calib{n_calib}"), os.path.join(work, "yolox_eval")
    for d, part in ((calib, names[:n_calib]), (ev, names[n_calib:n_calib + n_eval])):
        if not os.path.isdir(d):
            os.makedirs(d)
            for nme in part:
                shutil.copytree(os.path.join(alld, nme), os.path.join(d, nme))
    return calib, ev


def yolox(args, work, rows):
    calib, ev = coco_samples(args, work, 20, 40)
    model = os.path.join(args.shared, "models", "yolox_nano.onnx")
    q = os.path.join(work, "yolox.int8.onnx")
    secs = quantize(args, model, q, calib)
    res, _ = compare_outputs(model, q, load_samples(ev), args.threads)
    r = res["output"]
    rows.append(("YOLOX-nano", "output cosine vs fp32, mean / min (40 photos)", f"{r['mean_cos']:.5f} / {r['min_cos']:.5f}",
                 "mean >= 0.99", "", "met" if r["mean_cos"] >= 0.99 else "NOT met"))
    rows.append(("YOLOX-nano", "output SNR pooled / worst", f"{r['snr']:.2f} / {r['worst_snr']:.2f} dB", "", "", ""))
    add_decision_rows(rows, "YOLOX-nano", q, secs, "20 photos")
    if args.per_layer:
        p = subprocess.run([args.mcc, "eval", q, "--reference", model, "--inputs", ev, "--samples", "5", "--per-layer",
                            "--per-layer-top", "12", "--threads", str(args.threads)], capture_output=True, text=True)
        print(p.stdout)


def mobilenet(args, work, rows):
    from PIL import Image
    photos = sorted(glob.glob(os.path.join(args.shared, "data", "coco", "*.jpg")))
    mean = np.array([0.485, 0.456, 0.406], np.float32)
    std = np.array([0.229, 0.224, 0.225], np.float32)

    def prep(p):
        im = Image.open(p).convert("RGB").resize((224, 224), Image.BILINEAR)
        a = (np.asarray(im, np.float32) / 255.0 - mean) / std
        return a.transpose(2, 0, 1)[None].copy()

    samples = [(os.path.splitext(os.path.basename(p))[0], {"input": prep(p)}) for p in photos[40:80]]
    model = os.path.join(args.shared, "models", "mobilenet_v2_random_bn_opset13.onnx")
    res, agree, secs = quantize_and_compare(args, work, "mnv2", model, samples, 20)
    r = res["logits"]
    rows.append(("MobileNetV2", "logits SNR pooled / worst (20 COCO 224x224)", f"{r['snr']:.2f} / {r['worst_snr']:.2f} dB",
                 "reported", "", ""))
    rows.append(("MobileNetV2", "logits cosine mean / min; top-1 agreement", f"{r['mean_cos']:.5f} / {r['min_cos']:.5f}; {100 * agree:.0f} %",
                 "", "", ""))
    add_decision_rows(rows, "MobileNetV2", os.path.join(work, "mnv2.int8.onnx"), secs, "20 inputs")


def silero(args, work, rows):
    rng = np.random.default_rng(0)
    t = np.arange(512, dtype=np.float32) / 16000.0

    def chunk(i):
        kind = i % 3
        if kind == 0:   # tone
            a = 0.5 * np.sin(2 * np.pi * (200 + 150 * i) * t)
        elif kind == 1:  # white noise
            a = 0.1 * rng.standard_normal(512)
        else:            # tone in noise
            a = 0.3 * np.sin(2 * np.pi * (300 + 90 * i) * t) + 0.05 * rng.standard_normal(512)
        return {"input": a.astype(np.float32)[None], "sr": np.array(16000, np.int64),
                "h": np.zeros((2, 1, 64), np.float32), "c": np.zeros((2, 1, 64), np.float32)}

    samples = [(f"chunk{i:02d}", chunk(i)) for i in range(40)]
    model = os.path.join(args.shared, "models", "silero_vad_legacy.onnx")
    res, _, secs = quantize_and_compare(args, work, "vad", model, samples, 20)
    for n, r in res.items():
        rows.append(("Silero VAD", f"'{n}' SNR pooled / worst; cosine min (20 chunks)",
                     f"{r['snr']:.2f} / {r['worst_snr']:.2f} dB; {r['min_cos']:.5f}", "reported", "", ""))
    add_decision_rows(rows, "Silero VAD", os.path.join(work, "vad.int8.onnx"), secs, "20 chunks")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mcc", default=os.path.join(ROOT, "build", "mcc"))
    ap.add_argument("--shared", default=os.path.join(ROOT, "..", "shared"))
    ap.add_argument("--work", default="")
    ap.add_argument("--models", default="mnist,yolox,mobilenet,silero")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--per-layer", action="store_true")
    ap.add_argument("--quant-flags", default="", help="extra mcc quantize flags, e.g. '--method auto --mixed-target 0.99'")
    args = ap.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="mcc-quant-acc-")
    os.makedirs(work, exist_ok=True)
    rows = []
    for m in args.models.split(","):
        {"mnist": mnist, "yolox": yolox, "mobilenet": mobilenet, "silero": silero}[m](args, work, rows)
    print_table(f"onnxruntime {ort.__version__}, {args.threads} thread(s), work dir {work}",
                ("model", "metric", "value", "bar", "", "verdict"), rows)


if __name__ == "__main__":
    main()
