#!/usr/bin/env python3
"""Do mcc's compressed models run faster than their float originals in the runtimes they are deployed
on? Each model's variants are timed in ONNX Runtime and OpenVINO, beside what ONNX Runtime's own
quantizer and NNCF make of the same model, with an accuracy column measured on data not used for
calibration. Prints one markdown table per model.

Variants of each model:
  fp32             the float original
  mcc --target T   `mcc quantize MODEL -o OUT --calib CALIB --target T` for T in ort, openvino, with
                   mcc's defaults (its self-check included); when `mcc quantize -h` has no --target, one
                   row "mcc (no --target)". A failed run shows mcc's last stderr line in its row.
  ORT static       onnxruntime.quantization.quantize_static: QDQ, per channel, activations QUInt8,
                   weights QInt8, MinMax, the same calibration samples; a model below opset 13 is first
                   converted to 13 by onnx.version_converter (row "(opset N→13)"): per-channel
                   DequantizeLinear needs opset 13, and ORT's quantizer otherwise writes a model that
                   neither runtime loads
  NNCF             nncf.quantize on the ONNX model, default preset, the same calibration samples
  MiniLM also has  mcc --mode dynamic (defaults) and ORT quantize_dynamic (per channel, QInt8).

Models (--models), each skipped with a printed line when its files are missing:
  yolox      YOLOX-nano (../shared/models): COCO photos through ../shared/tools/coco_to_yolox_samples.py;
             calibrate on the first 20, judge on the next 40: output cosine vs fp32, mean / min.
  effnet     EfficientNet-Lite0 (build/bench_models/effnet, from ../shared/tools/effnet/build_effnet_lite.sh):
             the 100 COCO photos through its make_samples.py; calibrate on the first 20, judge on the
             other 80: top-1 agreement with fp32, on the photos and on 12 views of each (6 crops
             and their mirror images: 960 inputs, where one flip moves the figure 0.1 %, not 1.25 %).
  ppocr_det  PP-OCRv4 detector, ppocr_rec recogniser, ppocr_cls direction classifier (build/bench_models,
             from bench/fetch_real_models.py): COCO photos as RapidOCR prepares them (BGR, x/127.5 - 1);
             det the whole photo resized to 640x640, rec and cls a centre strip of the photo's full width
             resized to 48x320 and 48x192. Calibrate on the first 20, judge on the next 40: det the IoU
             of the probability maps thresholded at 0.3 (mean / min over the maps where either has
             pixels above it), rec and cls the argmax agreement with fp32 per output position.
  minilm     all-MiniLM-L6-v2 (build/bench_models/minilm, from ../shared/tools/minilm/export_minilm.py):
             its 64 tokenized sentences (seq 128); calibrate on the first 16, judge on the other 48:
             cosine of the sentence embedding (mean pooled over the attention mask) vs fp32, mean / min.
Accuracy is measured under ONNX Runtime at the highest thread count given.

Timing: per runtime and thread count, every variant of the model in the same run, on the first judged
sample. ONNX Runtime: CPUExecutionProvider, ORT_ENABLE_ALL, intra-op threads T, inter-op 1. OpenVINO:
compile_model(path, "CPU", {INFERENCE_NUM_THREADS: T, PERFORMANCE_HINT: LATENCY}); a model it cannot
compile shows the reason in its cell. --rounds rounds, the variant order rotated each round; in each
round a variant warms up for --warmup-ms then runs --runs times. Cells: the median over all timed runs
of all rounds, in ms, and its ratio to fp32 in the same runtime and thread count (below 1: faster).

usage: bench/deploy_speed.py [--models yolox,effnet,ppocr_det,ppocr_rec,ppocr_cls,minilm] [--threads 1 2]
       [--rounds 5] [--runs 10] [--warmup-ms 300] [--quick] [--skip-peers] [--mcc build/mcc]
       [--work build/deploy_speed] [--models-dir build/bench_models]
Needs: numpy, onnx, onnxruntime, openvino, nncf, pillow.
"""
import argparse
import glob
import logging
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np
import onnx
import onnxruntime as ort
import openvino as ov
from PIL import Image

from common import cosine

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(ROOT, "..", "shared")
ALL_MODELS = "yolox,effnet,ppocr_det,ppocr_rec,ppocr_cls,minilm"
MINILM_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


# ---------------------------------------------------------------------------------------------------
# inputs


def coco_photos():
    return sorted(glob.glob(os.path.join(SHARED, "data", "coco", "*.jpg")))


def folder_samples(root, inputs):
    """The sample folders under root, sorted, each as {input name: array}."""
    dirs = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    return [{k: np.load(os.path.join(root, d, k + ".npy")) for k in inputs} for d in dirs]


def tool_samples(cmd, out, inputs):
    """Runs a sample-making tool into `out` once (kept for later runs) and loads its folders."""
    if not os.path.isdir(out):
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            shutil.rmtree(out, ignore_errors=True)
            raise RuntimeError("%s failed: %s" % (os.path.basename(cmd[1]), r.stderr.strip()[-300:]))
    return folder_samples(out, inputs)


def yolox_samples(work):
    tool = os.path.join(SHARED, "tools", "coco_to_yolox_samples.py")
    out = os.path.join(work, "samples_yolox")
    return tool_samples([sys.executable, tool, out, "100"], out, ["images"])


def effnet_samples(work):
    tool = os.path.join(SHARED, "tools", "effnet", "make_samples.py")
    out = os.path.join(work, "samples_effnet")
    return tool_samples([sys.executable, tool, out, *coco_photos()], out, ["input"])


# Extra views of each judged photo for the classifier (top-1 agreement on 80 photos moves by 1.25 %
# a flip): the centre crop the model expects (7/8 of the shorter side), four smaller crops
# (0.7 centre, 0.7 top-left, 0.7 bottom-right, 0.6 top-right, 0.6 bottom-left), each also mirrored.
EFFNET_CROPS = [(0.875, 0.5, 0.5), (0.7, 0.5, 0.5), (0.7, 0.0, 0.0), (0.7, 1.0, 1.0), (0.6, 1.0, 0.0), (0.6, 0.0, 1.0)]


def effnet_views(photos, size=224):
    """[{input: [1,3,size,size]}] for every crop of EFFNET_CROPS and its mirror image, in
    EfficientNet-Lite's input convention (../shared/tools/effnet/make_samples.py: RGB, bicubic,
    (pixel - 127) / 128)."""
    out = []
    for p in photos:
        im = Image.open(p).convert("RGB")
        w, h = im.size
        for frac, fx, fy in EFFNET_CROPS:
            c = int(round(min(w, h) * frac))
            left, top = int((w - c) * fx), int((h - c) * fy)
            x = (np.asarray(im.crop((left, top, left + c, top + c)).resize((size, size), Image.BICUBIC),
                            dtype=np.float32) - 127.0) / 128.0
            x = x.transpose(2, 0, 1)[None]
            out.append({"input": np.ascontiguousarray(x)})
            out.append({"input": np.ascontiguousarray(x[..., ::-1])})
    return out


def ppocr_tensor(im, width, height):
    """PIL RGB image -> [1,3,height,width] float32 as RapidOCR feeds PP-OCR: BGR, (x/255 - 0.5)/0.5."""
    x = np.asarray(im.resize((width, height), Image.BILINEAR), np.float32)[:, :, ::-1]
    return np.ascontiguousarray((x / 127.5 - 1.0).transpose(2, 0, 1)[None])


def centre_strip(im, aspect):
    """The centre band of the photo's full width whose width/height is `aspect` (a text-line shape)."""
    h = max(1, min(im.height, round(im.width / aspect)))
    top = (im.height - h) // 2
    return im.crop((0, top, im.width, top + h))


def ppocr_samples(width, height, strip):
    def make(_work):
        out = []
        for p in coco_photos():
            im = Image.open(p).convert("RGB")
            out.append({"x": ppocr_tensor(centre_strip(im, width / height) if strip else im, width, height)})
        return out
    return make


def minilm_samples(_work):
    return folder_samples(os.path.join(SHARED, "tools", "minilm", "samples"), MINILM_INPUTS)


def save_samples(root, samples):
    """Writes samples as NumPy sample folders s000, s001, ... under root (replacing it)."""
    shutil.rmtree(root, ignore_errors=True)
    for i, feeds in enumerate(samples):
        d = os.path.join(root, "s%03d" % i)
        os.makedirs(d)
        for k, v in feeds.items():
            np.save(os.path.join(d, k + ".npy"), v)
    return root


# ---------------------------------------------------------------------------------------------------
# accuracy


def cosine_mean_min(refs, outs):
    c = [cosine(r, o) for r, o in zip(refs, outs)]
    return "%.5f / %.5f" % (np.mean(c), np.min(c))


def argmax_agreement(refs, outs):
    same = sum(int(np.sum(np.argmax(r, -1) == np.argmax(o, -1))) for r, o in zip(refs, outs))
    total = sum(np.argmax(r, -1).size for r in refs)
    return "%.1f %% (%d/%d)" % (100.0 * same / total, same, total)


def mask_iou(refs, outs, threshold=0.3):
    ious = []
    for r, o in zip(refs, outs):
        a, b = r > threshold, o > threshold
        union = int(np.sum(a | b))
        if union:
            ious.append(int(np.sum(a & b)) / union)
    if not ious:
        return "no map above %.1f" % threshold
    return "%.4f / %.4f (%d maps)" % (np.mean(ious), np.min(ious), len(ious))


# ---------------------------------------------------------------------------------------------------
# models


@dataclass
class Case:
    key: str
    title: str
    model: str
    how_to_get: str            # printed when the model is missing
    samples: Callable          # work dir -> list of {input: array}
    n_calib: int
    n_eval: Optional[int]      # None: every sample after the calibration ones
    output: str                # the output the metric judges
    metric_name: str
    metric: Callable           # (fp32 outputs, variant outputs) -> text
    transformer: bool = False  # adds the dynamic-quantization variants
    views: Optional[Callable] = None  # judged photos -> more judged inputs (more views of the same photos)


def cases(a):
    md = a.models_dir
    fetch = "run: python3 bench/fetch_real_models.py"
    return {
        "yolox": Case("yolox", "YOLOX-nano", os.path.join(SHARED, "models", "yolox_nano.onnx"),
                      "../shared/models/yolox_nano.onnx is part of the shared folder", yolox_samples, 20, 40,
                      "output", "output cosine vs fp32 mean / min", cosine_mean_min),
        "effnet": Case("effnet", "EfficientNet-Lite0", os.path.join(md, "effnet", "efficientnet_lite0.onnx"),
                       "run: ../shared/tools/effnet/build_effnet_lite.sh %s" % os.path.join(md, "effnet"),
                       effnet_samples, 20, None, "logits",
                       "top-1 agreement with fp32: the photos; %d views of each (%d crops and their mirrors)"
                       % (2 * len(EFFNET_CROPS), len(EFFNET_CROPS)), argmax_agreement, views=effnet_views),
        "ppocr_det": Case("ppocr_det", "PP-OCRv4 det 640x640", os.path.join(md, "ch_PP-OCRv4_det_infer.onnx"),
                          fetch, ppocr_samples(640, 640, False), 20, 40, "sigmoid_0.tmp_0",
                          "IoU of prob > 0.3 vs fp32 mean / min", mask_iou),
        "ppocr_rec": Case("ppocr_rec", "PP-OCRv4 rec 48x320", os.path.join(md, "ch_PP-OCRv4_rec_infer.onnx"),
                          fetch, ppocr_samples(320, 48, True), 20, 40, "softmax_11.tmp_0",
                          "argmax agreement per position", argmax_agreement),
        "ppocr_cls": Case("ppocr_cls", "PP-OCR v2.0 cls 48x192", os.path.join(md, "ch_ppocr_mobile_v2.0_cls_infer.onnx"),
                          fetch, ppocr_samples(192, 48, True), 20, 40, "save_infer_model/scale_0.tmp_1",
                          "argmax agreement", argmax_agreement),
        "minilm": Case("minilm", "MiniLM-L6 seq 128", os.path.join(md, "minilm", "minilm_l6_v2.onnx"),
                       "run: /usr/bin/python3 ../shared/tools/minilm/export_minilm.py %s" % os.path.join(md, "minilm"),
                       minilm_samples, 16, None, "sentence_embedding", "sentence embedding cosine vs fp32 mean / min",
                       cosine_mean_min, transformer=True),
    }


# ---------------------------------------------------------------------------------------------------
# variants


@dataclass
class Variant:
    label: str
    path: Optional[str] = None
    error: Optional[str] = None
    seconds: float = 0.0   # to make it


def one_line(e):
    """What an error message says failed, on one line: a one-line message whole; OpenVINO's summary of
    the ops it could not convert; else the first line that is not a source location and the last line,
    shortened. Model paths left out."""
    lines = [l.strip() for l in str(e).splitlines() if l.strip()] or [type(e).__name__]
    summary = [l for l in lines if l.startswith("-- Conversion is failed for")]
    located = [l for l in lines if not l.startswith("Exception from")] or lines
    reasons = [l for l in located if not l.startswith("Check '")] or located
    if summary:
        line = summary[0]
    elif reasons[0] == lines[-1]:
        line = reasons[0]
    else:
        line = reasons[0][:90] + " … " + lines[-1][:70]
    return re.sub(r"Load model from \S+ failed:", "", line).replace("|", "/")


def attempt(label, path, make):
    """Runs make(path); a Variant with the file, or with the one-line reason it could not be made."""
    t0 = time.perf_counter()
    try:
        make(path)
        return Variant(label, path, seconds=time.perf_counter() - t0)
    except Exception as e:  # every failure of a quantizer is a result to report
        return Variant(label, error=one_line(e), seconds=time.perf_counter() - t0)


def mcc_has_target(mcc):
    r = subprocess.run([mcc, "quantize", "-h"], capture_output=True, text=True)
    return "--target" in r.stdout + r.stderr


def mcc_quantize(mcc, model, args):
    def make(out):
        r = subprocess.run([mcc, "quantize", model, "-o", out, *args], capture_output=True, text=True)
        if r.returncode != 0:
            lines = [l for l in r.stderr.splitlines() if l.strip()] or ["(no stderr)"]
            raise RuntimeError("mcc exit %d: %s" % (r.returncode, lines[-1]))
    return make


def default_opset(model):
    return next(o.version for o in onnx.load(model, load_external_data=False).opset_import if o.domain in ("", "ai.onnx"))


def ort_static(model, calib):
    """quantize_static; a model below opset 13 is converted to 13 first (onnx.version_converter): ORT's
    per-channel QDQ output needs DequantizeLinear's axis, and below 13 writes a model that fails to load."""
    def make(out):
        from onnxruntime import quantization as q
        src = model
        if default_opset(model) < 13:
            src = out.replace(".onnx", ".opset13.onnx")
            onnx.save(onnx.version_converter.convert_version(onnx.load(model), 13), src)

        class Reader(q.CalibrationDataReader):
            def __init__(self):
                self.it = iter(calib)

            def get_next(self):
                return next(self.it, None)

        q.quantize_static(src, out, Reader(), quant_format=q.QuantFormat.QDQ, per_channel=True,
                          activation_type=q.QuantType.QUInt8, weight_type=q.QuantType.QInt8,
                          calibrate_method=q.CalibrationMethod.MinMax)
    return make


def ort_dynamic(model):
    def make(out):
        from onnxruntime import quantization as q
        q.quantize_dynamic(model, out, per_channel=True, weight_type=q.QuantType.QInt8)
    return make


def import_nncf():
    """NNCF, for ONNX models only: it imports torch when one is installed, and an older torch (Debian's
    python3-torch has no torch.uint16) breaks that import although the ONNX path never uses it."""
    try:
        import torch
        if not hasattr(torch, "uint16"):
            for k in [k for k in sys.modules if k == "torch" or k.startswith("torch.")]:
                del sys.modules[k]
            sys.modules["torch"] = None
    except ImportError:
        pass
    import nncf
    return nncf


def nncf_default(model, calib):
    def make(out):
        nncf = import_nncf()
        nncf.set_log_level(logging.ERROR)
        onnx.save(nncf.quantize(onnx.load(model), nncf.Dataset(calib), subset_size=len(calib)), out)
    return make


def make_variants(a, case, calib, calib_dir, vdir):
    out = lambda name: os.path.join(vdir, name + ".onnx")
    variants = [Variant("fp32", case.model)]
    static = ["--calib", calib_dir]
    if a.has_target:
        for t in ("ort", "openvino"):
            variants.append(attempt("mcc --target %s" % t, out("mcc_" + t), mcc_quantize(a.mcc, case.model, static + ["--target", t])))
    else:
        variants.append(attempt("mcc (no --target)", out("mcc"), mcc_quantize(a.mcc, case.model, static)))
    if case.transformer:
        variants.append(attempt("mcc --mode dynamic", out("mcc_dynamic"), mcc_quantize(a.mcc, case.model, ["--mode", "dynamic"])))
    if not a.skip_peers:
        upgraded = " (opset %d→13)" % default_opset(case.model) if default_opset(case.model) < 13 else ""
        variants.append(attempt("ORT quantize_static" + upgraded, out("ort_static"), ort_static(case.model, calib)))
        variants.append(attempt("NNCF default", out("nncf"), nncf_default(case.model, calib)))
        if case.transformer:
            variants.append(attempt("ORT quantize_dynamic", out("ort_dynamic"), ort_dynamic(case.model)))
    return variants


# ---------------------------------------------------------------------------------------------------
# runtimes


def ort_session(path, threads):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def ort_runner(path, threads, feeds):
    sess = ort_session(path, threads)
    return lambda: sess.run(None, feeds)


def ov_runner(core, path, threads, feeds):
    compiled = core.compile_model(path, "CPU", {"INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY"})
    req = compiled.create_infer_request()
    return lambda: req.infer(feeds, share_inputs=True)


def outputs_under_ort(path, output, samples, threads):
    sess = ort_session(path, threads)
    return [sess.run([output], s)[0] for s in samples]


def timed_runs(fn, warmup_ms, runs):
    """Runs fn for at least warmup_ms (one run at least), then `runs` times: their times in ms."""
    t0 = time.perf_counter()
    while True:
        fn()
        if (time.perf_counter() - t0) * 1000 >= warmup_ms:
            break
    ts = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t) * 1000)
    return ts


def time_variants(variants, make_runner, a):
    """{label: median ms, or the one-line reason the runtime could not load it}, rounds alternating
    over the variants with the order rotated each round."""
    runners, result = {}, {}
    for v in variants:
        try:
            runners[v.label] = make_runner(v.path)
        except Exception as e:  # a runtime refusing a model is a result to report
            result[v.label] = one_line(e)
    times = {label: [] for label in runners}
    order = list(runners)
    for r in range(a.rounds):
        k = r % len(order) if order else 0
        for label in order[k:] + order[:k]:
            times[label] += timed_runs(runners[label], a.warmup_ms, a.runs)
    result.update({label: float(np.median(ts)) for label, ts in times.items()})
    return result


def cell(ms, base):
    if isinstance(ms, str):
        return "fails: " + ms
    if isinstance(base, float):
        return "%.2f (%.2f×)" % (ms, ms / base)
    return "%.2f" % ms


# ---------------------------------------------------------------------------------------------------
# report


def print_markdown(title, head, rows, notes=()):
    print("\n### %s\n" % title)
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" for _ in head) + "|")
    for r in rows:
        print("| " + " | ".join(str(c) for c in r) + " |")
    for n in notes:
        print("\n" + n)
    sys.stdout.flush()


def size_mb(path):
    return "%.2f" % (os.path.getsize(path) / 1e6)


def judge(case, variants, evals, threads, views=None):
    """{label: metric text} for each variant that exists, measured under ONNX Runtime; with views,
    the metric on them follows after a semicolon."""
    refs = outputs_under_ort(case.model, case.output, evals, threads)
    view_refs = outputs_under_ort(case.model, case.output, views, threads) if views else None
    res = {}
    for v in variants:
        if v.error:
            continue
        try:
            res[v.label] = case.metric(refs, outputs_under_ort(v.path, case.output, evals, threads))
            if views:
                res[v.label] += "; " + case.metric(view_refs, outputs_under_ort(v.path, case.output, views, threads))
        except Exception as e:  # ORT refusing a model is a result to report
            res[v.label] = "ORT fails: " + one_line(e)
    return res


def run_case(a, case, core):
    if not os.path.exists(case.model):
        print("\n!!! SKIPPED %s: %s is missing (%s)" % (case.key, case.model, case.how_to_get), flush=True)
        return
    try:
        samples = case.samples(a.work)
    except Exception as e:  # missing photos or tools
        print("\n!!! SKIPPED %s: no samples: %s" % (case.key, one_line(e)), flush=True)
        return
    calib = samples[:case.n_calib]
    evals = samples[case.n_calib:case.n_calib + case.n_eval if case.n_eval else None]
    wd = os.path.join(a.work, case.key)
    shutil.rmtree(wd, ignore_errors=True)
    os.makedirs(wd)
    variants = make_variants(a, case, calib, save_samples(os.path.join(wd, "calib"), calib), wd)
    ok = [v for v in variants if not v.error]
    views = case.views(coco_photos()[case.n_calib:]) if case.views else None
    acc = judge(case, variants, evals, max(a.threads), views)
    configs = [("ORT", t, lambda p, t=t: ort_runner(p, t, evals[0])) for t in a.threads] + \
              [("OV", t, lambda p, t=t: ov_runner(core, p, t, evals[0])) for t in a.threads]
    timing = {(rt, t): time_variants(ok, mk, a) for rt, t, mk in configs}
    head = ["variant", case.metric_name, "MB"] + ["%s %dt ms (×fp32)" % (rt, t) for rt, t, _ in configs]
    rows = []
    for v in variants:
        if v.error:
            rows.append([v.label, "failed: " + v.error, "-"] + ["-"] * len(configs))
            continue
        rows.append([v.label, acc[v.label], size_mb(v.path)] +
                    [cell(timing[(rt, t)][v.label], timing[(rt, t)].get("fp32")) for rt, t, _ in configs])
    print_markdown("%s: %d calibration / %d judged samples" % (case.title, len(calib), len(evals)), head, rows,
                   ["%d rounds × %d runs (+%.0f ms warm-up) per variant and cell; accuracy under ONNX Runtime, "
                    "%d thread(s). Seconds to make: %s." % (a.rounds, a.runs, a.warmup_ms, max(a.threads),
                                                           ", ".join("%s %.0f" % (v.label, v.seconds) for v in variants[1:]))])


def int8_features(lscpu):
    """The lscpu flags that decide which int8 and bf16 kernels the runtimes pick (VNNI, AMX), or 'none'."""
    flags = next((l.split(":", 1)[1].split() for l in lscpu.splitlines() if l.startswith("Flags")), [])
    wanted = ("avx512_vnni", "avx_vnni", "avx512_bf16", "amx_int8", "amx_bf16")
    return " ".join(f for f in wanted if f in flags) or "none"


def print_machine(core):
    print("uptime:%s" % subprocess.run(["uptime"], capture_output=True, text=True).stdout.rstrip())
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    print(next((l for l in lscpu.splitlines() if l.startswith("Model name")), "Model name: unknown"))
    print("int8/bf16 instructions: %s" % int8_features(lscpu))
    print("onnxruntime %s, openvino %s; OpenVINO CPU default inference precision for fp32 models: %s"
          % (ort.__version__, ov.get_version(), core.get_property("CPU", "INFERENCE_PRECISION_HINT")))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=ALL_MODELS, help="comma-separated, of: " + ALL_MODELS)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--rounds", type=int, default=5, help="rounds alternating over the variants")
    ap.add_argument("--runs", type=int, default=10, help="timed runs per variant and round")
    ap.add_argument("--warmup-ms", type=float, default=300.0, help="warm-up per variant and round")
    ap.add_argument("--quick", action="store_true", help="smoke test: 2 rounds of 3 runs")
    ap.add_argument("--skip-peers", action="store_true", help="leave out ORT's quantizers and NNCF")
    ap.add_argument("--mcc", default=os.path.join(ROOT, "build", "mcc"))
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "deploy_speed"))
    ap.add_argument("--models-dir", default=os.path.join(ROOT, "build", "bench_models"),
                    help="where bench/fetch_real_models.py and the effnet/minilm builds put their models")
    a = ap.parse_args()
    if a.quick:
        a.rounds, a.runs = 2, 3
    known = cases(a)
    unknown = [m for m in a.models.split(",") if m not in known]
    if unknown:
        ap.error("unknown model(s) %s; choose from %s" % (",".join(unknown), ALL_MODELS))
    if not os.access(a.mcc, os.X_OK):
        sys.exit("%s is not an executable mcc" % a.mcc)
    a.has_target = mcc_has_target(a.mcc)
    logging.getLogger().setLevel(logging.ERROR)  # ORT's quantizer advises pre-processing on every call
    os.makedirs(a.work, exist_ok=True)
    core = ov.Core()
    print_machine(core)
    print("mcc %s: quantize %s --target" % (a.mcc, "has" if a.has_target else "has no"))
    for m in a.models.split(","):
        run_case(a, known[m], core)
    print("\nuptime:%s" % subprocess.run(["uptime"], capture_output=True, text=True).stdout.rstrip())


if __name__ == "__main__":
    main()
