#!/usr/bin/env python3
"""cpu backend latency and peak memory against ONNX Runtime, side by side in one run.

For each model and each thread count: the same inputs, the same warm-up and run counts; mcc through
`mcc bench --json --raw`, ONNX Runtime through its Python API with its default graph optimisations
(intra-op threads = T, inter-op 1). The two alternate in rounds so machine load hits both alike; the
table has medians, the ratio mcc/ORT (below 1: mcc faster), mcc's 2-thread/1-thread ratio, and the
geometric mean of the ratios over the fp32 real models. Peak RSS: mcc's own figure from `mcc bench`
and ORT's from a child process that loads and runs the model alone (VmHWM), at the last thread
count given.

The default set is 12 real models: MNIST, Silero VAD and YOLOX-nano from golden/ (their golden
inputs), MobileNetV2 from ../shared/models, MiniLM-L6 built by ../shared/tools/minilm (--minilm;
sample 00), the PP-OCRv4 detector/recogniser/classifier and openWakeWord's melspectrogram, embedding
and "hey jarvis" models fetched by bench/fetch_real_models.py (--models-dir), SmolLM2-135M built by
../shared/tools/smollm2 (--smollm2; a 256-token prefill of seeded random ids); two streaming models
whose work runs inside Loop and If bodies and a Silero-VAD-v5-shaped model whose convs and LSTM run
inside an If's branch, exported with random weights by bench/export_loop_models.py (--models-dir;
50 frames; 576 samples at 16 kHz); then the int8 QDQ files
mcc's own `mcc quantize` makes from YOLOX-nano (COCO photos through
../shared/tools/coco_to_yolox_samples.py) and MobileNetV2 (seeded random calibration), which both
runtimes run as they are (--no-int8 leaves them out). A model that is missing is reported as skipped.

Each round warms both runtimes up with the same number of runs, at least --warmup and enough for
--warmup-ms of ORT's time: on a machine whose idle core sleeps, a few runs are not enough for the
second thread to run at full speed (ORT's own 2-thread times in fresh processes after 3 runs were
1.7x its warm times on the wake-word embedding model).

usage: bench/cpu_vs_ort.py [--threads 1 2] [--rounds 4] [--runs 20] [--warmup 3] [--warmup-ms 300] [--mcc build/mcc]
       [--minilm MODEL] [--smollm2 MODEL] [--models-dir build/bench_models] [--no-int8]
       [--only NAME ...] [--json FILE] [MODEL.onnx ...]   (explicit models: seeded random inputs)
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnxruntime as ort

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(ROOT, "..", "shared")
NP_TYPES = {"tensor(float)": np.float32, "tensor(int64)": np.int64, "tensor(int32)": np.int32,
            "tensor(double)": np.float64, "tensor(float16)": np.float16, "tensor(bool)": np.bool_,
            "tensor(uint8)": np.uint8, "tensor(int8)": np.int8}


def real_models(a):
    """(name, model path, input source) of the default set. An input source is a folder of .npy
    files named after the inputs, or {input: shape} for seeded random inputs."""
    g = lambda case: os.path.join(ROOT, "golden", case)
    md = a.models_dir
    return [
        ("mnist", os.path.join(g("mnist"), "model.onnx"), os.path.join(g("mnist"), "digit_0")),
        ("silero_vad", os.path.join(g("silero_vad"), "model.onnx"), os.path.join(g("silero_vad"), "chunk_0")),
        ("yolox_nano", os.path.join(g("yolox_nano"), "model.onnx"), os.path.join(g("yolox_nano"), "synthetic_0")),
        ("mobilenet_v2", os.path.join(SHARED, "models", "mobilenet_v2_random_bn_opset13.onnx"),
         {"input": [1, 3, 224, 224]}),
        ("minilm_l6_seq128", a.minilm, os.path.join(SHARED, "tools", "minilm", "samples", "00")),
        ("ppocr_v4_det_640", os.path.join(md, "ch_PP-OCRv4_det_infer.onnx"), {"x": [1, 3, 640, 640]}),
        ("ppocr_v4_rec_48x320", os.path.join(md, "ch_PP-OCRv4_rec_infer.onnx"), {"x": [1, 3, 48, 320]}),
        ("ppocr_cls_48x192", os.path.join(md, "ch_ppocr_mobile_v2.0_cls_infer.onnx"), {"x": [1, 3, 48, 192]}),
        ("oww_melspectrogram_1s", os.path.join(md, "melspectrogram.onnx"), {"input": [1, 16000]}),
        ("oww_embedding", os.path.join(md, "embedding_model.onnx"), {"input_1": [1, 76, 32, 1]}),
        ("oww_hey_jarvis", os.path.join(md, "hey_jarvis_v0.1.onnx"), {"x.1": [1, 16, 96]}),
        ("loop_gru_frames", os.path.join(md, "loop_gru_frames.onnx"), {"frames": [1, 50, 64], "h0": [1, 128]}),
        ("loop_if_gate", os.path.join(md, "loop_if_gate.onnx"), {"frames": [1, 50, 64], "h0": [1, 128]}),
        ("if_vad_branches", os.path.join(md, "if_vad_branches.onnx"),
         {"input": [1, 576], "state": [2, 1, 128], "sr": np.array(16000, np.int64)}),
        ("smollm2_prefill_256", a.smollm2,
         {"input_ids": np.random.default_rng(0).integers(0, 49152, (1, 256), dtype=np.int64)}),
    ]


def random_feeds(sess, shapes):
    rng = np.random.default_rng(0)
    feeds = {}
    for i in sess.get_inputs():
        if isinstance(shapes.get(i.name), np.ndarray):  # a fixed value (a sample rate, a flag)
            feeds[i.name] = shapes[i.name]
            continue
        shape = shapes.get(i.name) or [d if isinstance(d, int) else 1 for d in i.shape]
        dt = NP_TYPES[i.type]
        feeds[i.name] = (rng.random(shape) * 2 - 1).astype(dt) if dt in (np.float32, np.float64, np.float16) \
            else np.zeros(shape, dt)
    return feeds


def load_feeds(sess, source):
    if isinstance(source, dict):
        return random_feeds(sess, source)
    return {i.name: np.load(os.path.join(source, i.name + ".npy")) for i in sess.get_inputs()}


def ort_session(model, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])


def ort_times(sess, feeds, warmup, runs):
    for _ in range(warmup):
        sess.run(None, feeds)
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        ts.append((time.perf_counter() - t0) * 1000)
    return ts


ORT_RSS_CHILD = r"""
import os, sys, numpy as np, onnxruntime as ort
model, d, threads, runs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
so = ort.SessionOptions(); so.intra_op_num_threads = threads; so.inter_op_num_threads = 1
s = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
feeds = {i.name: np.load(os.path.join(d, i.name + ".npy")) for i in s.get_inputs()}
for _ in range(runs): s.run(None, feeds)
# VmHWM: this process's own peak (ru_maxrss would keep the forking parent's watermark).
print(next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:")) / 1024.0)
"""


def ort_peak_rss_mb(model, d, threads, runs):
    r = subprocess.run([sys.executable, "-c", ORT_RSS_CHILD, model, d, str(threads), str(runs)],
                       capture_output=True, text=True)
    return float(r.stdout.strip()) if r.returncode == 0 else float("nan")


def mcc_bench(mcc, model, d, threads, warmup, runs):
    r = subprocess.run([mcc, "bench", model, "--inputs", d, "--threads", str(threads), "--runs", str(runs),
                        "--warmup", str(warmup), "--json", "-q", "--raw"], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("mcc failed (exit %d): %s" % (r.returncode, " ".join(r.stderr.strip().splitlines()[-1:])))
    return json.loads(r.stdout)


def make_int8_models(a, work):
    """mcc's own int8 QDQ files of YOLOX-nano and MobileNetV2: (name, path, input source, fp32 name)."""
    out = []
    yolox = os.path.join(ROOT, "golden", "yolox_nano", "model.onnx")
    photos = os.path.join(work, "yolox_calib")
    tool = os.path.join(SHARED, "tools", "coco_to_yolox_samples.py")
    if subprocess.run([sys.executable, tool, photos, "20"], capture_output=True).returncode == 0:
        q = os.path.join(work, "yolox_nano_int8.onnx")
        r = subprocess.run([a.mcc, "quantize", yolox, "-o", q, "--calib", photos, "-q"], capture_output=True, text=True)
        if r.returncode == 0:
            out.append(("yolox_nano_int8", q, os.path.join(ROOT, "golden", "yolox_nano", "synthetic_0"), "yolox_nano"))
        else:
            print("skipped yolox_nano_int8: mcc quantize failed: %s" % r.stderr.strip()[-200:])
    else:
        print("skipped yolox_nano_int8: %s could not make calibration photos (needs PIL and ../shared/data/coco)" % tool)
    mbv2 = os.path.join(SHARED, "models", "mobilenet_v2_random_bn_opset13.onnx")
    if os.path.exists(mbv2):
        calib = os.path.join(work, "mbv2_calib")
        rng = np.random.default_rng(1)
        for k in range(8):
            os.makedirs(os.path.join(calib, "s%02d" % k), exist_ok=True)
            np.save(os.path.join(calib, "s%02d" % k, "input.npy"), rng.standard_normal((1, 3, 224, 224)).astype(np.float32))
        q = os.path.join(work, "mobilenet_v2_int8.onnx")
        # Random weights: no accuracy budget applies, so the check stage is off.
        r = subprocess.run([a.mcc, "quantize", mbv2, "-o", q, "--calib", calib, "--no-check", "-q"],
                           capture_output=True, text=True)
        if r.returncode == 0:
            out.append(("mobilenet_v2_int8", q, {"input": [1, 3, 224, 224]}, "mobilenet_v2"))
        else:
            print("skipped mobilenet_v2_int8: mcc quantize failed: %s" % r.stderr.strip()[-200:])
    return out


def geomean(xs):
    xs = [x for x in xs if x == x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("models", nargs="*", help="explicit .onnx files instead of the default set")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--runs", type=int, default=20, help="timed runs per runtime, split over the rounds")
    ap.add_argument("--warmup", type=int, default=3, help="least warm-up runs per round")
    ap.add_argument("--warmup-ms", type=float, default=300.0,
                    help="warm up at least this long per round (both runtimes get the same run count): "
                         "an idle second core needs tens of ms of load before it runs at full speed")
    ap.add_argument("--rounds", type=int, default=4, help="alternate mcc and ORT this many times")
    ap.add_argument("--mcc", default=os.path.join(ROOT, "build", "mcc"))
    ap.add_argument("--minilm", default=None,
                    help="all-MiniLM-L6-v2 as exported by ../shared/tools/minilm/export_minilm.py "
                         "(default: MODELS_DIR/minilm/minilm_l6_v2.onnx where bench/deploy_speed.py "
                         "builds it, else /work/minilm/minilm_l6_v2.onnx)")
    ap.add_argument("--smollm2", default=None,
                    help="SmolLM2-135M as built by ../shared/tools/smollm2/build_smollm2.sh, timed on a "
                         "256-token prefill of seeded random token ids (default: "
                         "MODELS_DIR/smollm2/smollm2_135m.onnx)")
    ap.add_argument("--models-dir", default=os.path.join(ROOT, "build", "bench_models"),
                    help="where bench/fetch_real_models.py put the OCR and wake-word models")
    ap.add_argument("--no-int8", action="store_true", help="leave out mcc's int8 YOLOX-nano and MobileNetV2")
    ap.add_argument("--only", nargs="+", help="names of the default set to run")
    ap.add_argument("--json", help="also write the results here")
    a = ap.parse_args()
    if a.smollm2 is None:
        a.smollm2 = os.path.join(a.models_dir, "smollm2", "smollm2_135m.onnx")
    if a.minilm is None:
        built = os.path.join(a.models_dir, "minilm", "minilm_l6_v2.onnx")
        a.minilm = built if os.path.exists(built) else "/work/minilm/minilm_l6_v2.onnx"

    with tempfile.TemporaryDirectory() as work:
        if a.models:
            cases = [(os.path.basename(m).replace(".onnx", ""), m, {}) for m in a.models]
        else:
            cases = real_models(a)
        int8 = [] if a.models or a.no_int8 else make_int8_models(a, work)
        fp32_of = {c[0]: c[3] for c in int8}
        cases = [c[:3] for c in cases] + [c[:3] for c in int8]
        if a.only:
            cases = [c for c in cases if c[0] in a.only]

        print("threads %s, %d rounds, %d timed runs (+ at least %d warm-up runs and %.0f ms per round) per runtime; "
              "medians in ms; load(1m) %.2f" % (a.threads, a.rounds, a.runs, a.warmup, a.warmup_ms, os.getloadavg()[0]))
        head = "%-24s" % "model" + "".join("%9s %9s %7s" % ("mcc_%dt" % t, "ort_%dt" % t, "ratio") for t in a.threads)
        head += " %8s %8s %8s" % ("mcc_2/1", "rss_mcc", "rss_ort")
        print(head)
        results = []
        per_round = max(1, a.runs // a.rounds)
        for name, model, source in cases:
            if not os.path.exists(model):
                print("%-24s skipped: %s does not exist" % (name, model))
                results.append({"model": name, "skipped": model + " does not exist"})
                continue
            d = os.path.join(work, "in_" + name)
            os.makedirs(d, exist_ok=True)
            feeds = load_feeds(ort_session(model, 1), source)
            for k, v in feeds.items():
                np.save(os.path.join(d, k + ".npy"), v)
            row = {"model": name, "path": model, "ms": {}, "fp32_model": fp32_of.get(name)}
            try:
                sessions, warmups, mt, ot, rss = {}, {}, {}, {}, float("nan")
                for t in a.threads:
                    sessions[t] = ort_session(model, t)
                    # Warm-up as a run count fixed from ORT's first runs, the same for both runtimes.
                    estimate = float(np.median(ort_times(sessions[t], feeds, 1, 3)))
                    warmups[t] = max(a.warmup, int(math.ceil(a.warmup_ms / max(estimate, 1e-3))))
                    row.setdefault("warmup_runs", {})[str(t)] = warmups[t]
                    mt[t], ot[t] = [], []
                # Each round runs every thread count, so mcc's 2-thread/1-thread ratio is measured
                # side by side like mcc/ORT.
                for _ in range(a.rounds):
                    for t in a.threads:
                        ot[t] += ort_times(sessions[t], feeds, warmups[t], per_round)
                        r = mcc_bench(a.mcc, model, d, t, warmups[t], per_round)
                        mt[t] += r["runs_ms"]
                        rss = r.get("peak_rss_mb", rss)
                for t in a.threads:
                    row["ms"][str(t)] = {"mcc": float(np.median(mt[t])), "ort": float(np.median(ot[t]))}
                row["rss_mcc_mb"] = rss
            except RuntimeError as e:
                print("%-24s %s" % (name, e))
                results.append({"model": name, "failed": str(e)})
                continue
            row["rss_ort_mb"] = ort_peak_rss_mb(model, d, a.threads[-1], a.warmup + per_round)
            line = "%-24s" % name
            for t in a.threads:
                m = row["ms"][str(t)]
                m["ratio"] = m["mcc"] / m["ort"]
                line += "%9.3f %9.3f %7.2f" % (m["mcc"], m["ort"], m["ratio"])
            if "1" in row["ms"] and "2" in row["ms"]:
                row["mcc_2_over_1"] = row["ms"]["2"]["mcc"] / row["ms"]["1"]["mcc"]
                line += " %8.2f" % row["mcc_2_over_1"]
            else:
                line += " %8s" % "-"
            line += " %8.1f %8.1f" % (row["rss_mcc_mb"], row["rss_ort_mb"])
            print(line, flush=True)
            results.append(row)

    timed = [r for r in results if "ms" in r]
    real = [r for r in timed if not r.get("fp32_model")]
    summary = {}
    for t in a.threads:
        ratios = [r["ms"][str(t)]["ratio"] for r in real]
        if ratios:
            worst = max(real, key=lambda r: r["ms"][str(t)]["ratio"])
            summary[str(t)] = {"geomean": geomean(ratios), "models": len(ratios), "worst": worst["model"],
                               "worst_ratio": worst["ms"][str(t)]["ratio"]}
            print("%d thread(s): geomean mcc/ORT over %d fp32 models %.3f; worst %s %.2f"
                  % (t, len(ratios), summary[str(t)]["geomean"], worst["model"], summary[str(t)]["worst_ratio"]))
    slower = [r["model"] for r in timed if r.get("mcc_2_over_1", 0) > 1.0]
    if 1 in a.threads and 2 in a.threads:
        print("mcc slower at 2 threads than at 1: %s" % (", ".join(slower) if slower else "none"))
    by_name = {r["model"]: r for r in timed}
    for r in timed:
        f = by_name.get(r.get("fp32_model") or "")
        if f:
            for t in a.threads:
                sp = f["ms"][str(t)]["mcc"] / r["ms"][str(t)]["mcc"]
                r.setdefault("int8_speedup_on_mcc", {})[str(t)] = sp
                print("%s at %d thread(s): %.2f× faster than %s on mcc; %.2f× ORT's time on the same QDQ file"
                      % (r["model"], t, sp, f["model"], r["ms"][str(t)]["ratio"]))
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"results": results, "summary": summary}, fh, indent=2)


if __name__ == "__main__":
    main()
