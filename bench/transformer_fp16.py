#!/usr/bin/env python3
"""fp16 on a trained transformer: size and accuracy of `mcc convert -p fp16` on MiniLM-L6
(all-MiniLM-L6-v2, ../shared/tools/minilm), next to ONNX Runtime's own fp16 converter
(onnxruntime.transformers.float16, keep_io_types=True) and onnxconverter_common's when installed.

Every model runs in ONNX Runtime (the independent reference) on the 64 tokenized samples in
../shared/tools/minilm/samples; the reference is the fp32 model's sentence_embedding there (the
stored .npy files, checked against a fresh fp32 run). Reported per model: file size, cosine
of sentence_embedding to fp32 (mean and min over the samples), and the largest |difference| of
last_hidden_state at unmasked positions.

The MiniLM model is not in the repository; make it first:
  /usr/bin/python3 ../shared/tools/minilm/export_minilm.py /work/minilm

usage: bench/transformer_fp16.py [--model /work/minilm/minilm_l6_v2.onnx] [--mcc build/mcc]
                                 [--spec fp16] [--work DIR] [--json FILE]
Exit status 1 when mcc's fp16 misses its bar (mean cosine >= 0.9999, file <= 46 MB).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort

from common import cosine

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SAMPLES = os.path.join(ROOT, "..", "shared", "tools", "minilm", "samples")
INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def load_samples():
    out = []
    for d in sorted(os.listdir(SAMPLES)):
        p = os.path.join(SAMPLES, d)
        if not os.path.isdir(p):
            continue
        feeds = {k: np.load(os.path.join(p, k + ".npy")) for k in INPUTS}
        ref = {k: np.load(os.path.join(p, k + ".npy")) for k in ("sentence_embedding", "last_hidden_state")}
        out.append((feeds, ref))
    if not out:
        sys.exit(f"no samples under {SAMPLES}")
    return out


def session(path):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def measure(path, samples):
    s = session(path)
    names = [o.name for o in s.get_outputs()]
    cos, hid = [], 0.0
    for feeds, ref in samples:
        got = dict(zip(names, s.run(None, feeds)))
        cos.append(cosine(got["sentence_embedding"], ref["sentence_embedding"]))
        mask = feeds["attention_mask"].astype(bool)
        diff = np.abs(got["last_hidden_state"].astype(np.float64) - ref["last_hidden_state"])[mask]
        hid = max(hid, float(diff.max()))
    return {"bytes": os.path.getsize(path), "cosine_mean": float(np.mean(cos)), "cosine_min": float(np.min(cos)),
            "hidden_max_abs_diff": hid}


def minilm_work_dir(a, prefix):
    """Exits naming the export command when the MiniLM model is missing; returns the work folder."""
    if not os.path.exists(a.model):
        sys.exit(f"{a.model} is missing; run /usr/bin/python3 ../shared/tools/minilm/export_minilm.py /work/minilm")
    work = a.work or tempfile.mkdtemp(prefix=prefix)
    os.makedirs(work, exist_ok=True)
    return work


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="/work/minilm/minilm_l6_v2.onnx")
    ap.add_argument("--mcc", default=os.path.join(ROOT, "build", "mcc"))
    ap.add_argument("--spec", default="fp16")
    ap.add_argument("--work", default=None)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    work = minilm_work_dir(a, "transformer_fp16_")
    samples = load_samples()
    results = {"samples": len(samples)}

    results["fp32"] = measure(a.model, samples)

    out = os.path.join(work, "mcc_fp16.onnx")
    r = subprocess.run([a.mcc, "convert", a.model, "-o", out, "-p", a.spec, "--json"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"mcc convert failed ({r.returncode}): {r.stderr.strip()}")
    state = json.loads(r.stdout)
    onnx.checker.check_model(out, full_check=True)
    results["mcc"] = measure(out, samples)
    results["mcc"]["spec"] = a.spec
    results["mcc"]["stats"] = state["stages"][-1]["stats"]
    # Replay from the sidecar state must give the same bytes.
    replay = os.path.join(work, "mcc_fp16_replay.onnx")
    sidecar = os.path.splitext(out)[0] + ".mcc.json"
    r = subprocess.run([a.mcc, "convert", a.model, "-o", replay, "--state", sidecar], capture_output=True, text=True)
    results["mcc"]["replay_identical"] = r.returncode == 0 and open(out, "rb").read() == open(replay, "rb").read()

    # ONNX Runtime's converter (onnxruntime.transformers.float16, its fork of onnxconverter_common's
    # float16 module). onnxconverter_common 1.16's own convert_float_to_float16 makes a model ONNX
    # Runtime refuses here (it types the output of the attention mask's Cast to float as float16);
    # it is tried as well and its error reported.
    from onnxruntime.transformers import float16 as ort_float16
    m = ort_float16.convert_float_to_float16(onnx.load(a.model), keep_io_types=True)
    ref16 = os.path.join(work, "ort_float16.onnx")
    onnx.save(m, ref16)
    results["ort_float16"] = measure(ref16, samples)
    try:
        from onnxconverter_common import float16 as occ_float16
    except ImportError:
        results["onnxconverter_common"] = "not installed (pip install onnxconverter-common)"
    else:
        m = occ_float16.convert_float_to_float16(onnx.load(a.model), keep_io_types=True)
        occ = os.path.join(work, "onnxconverter_common_float16.onnx")
        onnx.save(m, occ)
        try:
            results["onnxconverter_common"] = measure(occ, samples)
        except Exception as e:  # noqa: BLE001 - reported, not fatal
            results["onnxconverter_common"] = "ONNX Runtime refuses its model: " + str(e).splitlines()[0][:160]

    print(f"{'model':<21} {'MB':>7} {'cos mean':>10} {'cos min':>10} {'hidden max|d|':>14}")
    for k in ("fp32", "mcc", "ort_float16", "onnxconverter_common"):
        v = results[k]
        if isinstance(v, str):
            print(f"{k:<21} {v}")
            continue
        print(f"{k:<21} {v['bytes'] / 1e6:7.2f} {v['cosine_mean']:10.7f} {v['cosine_min']:10.7f} "
              f"{v['hidden_max_abs_diff']:14.5f}")
    print(f"mcc replay byte-identical: {results['mcc']['replay_identical']}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    ok = (results["mcc"]["cosine_mean"] >= 0.9999 and results["mcc"]["bytes"] <= 46e6 and
          results["mcc"]["replay_identical"])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
