#!/usr/bin/env python3
"""Fetches the real models of the speed table that are not bundled: trained ONNX files carried in
two PyPI wheels, pinned by version and checked by SHA-256.

  rapidocr-onnxruntime 1.4.4 (Apache-2.0): PP-OCRv4 text detector and recogniser, PP-OCR v2.0
      direction classifier (PaddleOCR, Apache-2.0).
  openwakeword 0.5.1 (code Apache-2.0; its models CC BY-NC-SA 4.0: used here for timing only,
      never redistributed): melspectrogram front end, speech embedding model, "hey jarvis" model.

The wheels come from PyPI through `pip download` (the only network access; nothing at build or test
time). Files already present with the right hash are kept.

usage: bench/fetch_real_models.py [--dir build/bench_models]
"""
import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_DIR = os.path.join(ROOT, "build", "bench_models")

# wheel requirement -> the model files taken from it
MODELS = {
    "rapidocr-onnxruntime==1.4.4": ["rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
                                    "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx",
                                    "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx"],
    "openwakeword==0.5.1": ["openwakeword/resources/models/melspectrogram.onnx",
                            "openwakeword/resources/models/embedding_model.onnx",
                            "openwakeword/resources/models/hey_jarvis_v0.1.onnx"],
}
SHA256 = {  # file -> sha256
    "ch_PP-OCRv4_det_infer.onnx": "d2a7720d45a54257208b1e13e36a8479894cb74155a5efe29462512d42f49da9",
    "ch_PP-OCRv4_rec_infer.onnx": "48fc40f24f6d2a207a2b1091d3437eb3cc3eb6b676dc3ef9c37384005483683b",
    "ch_ppocr_mobile_v2.0_cls_infer.onnx": "e47acedf663230f8863ff1ab0e64dd2d82b838fceb5957146dab185a89d6215c",
    "melspectrogram.onnx": "ba2b0e0f8b7b875369a2c89cb13360ff53bac436f2895cced9f479fa65eb176f",
    "embedding_model.onnx": "70d164290c1d095d1d4ee149bc5e00543250a7316b59f31d056cff7bd3075c1f",
    "hey_jarvis_v0.1.onnx": "94a13cfe60075b132f6a472e7e462e8123ee70861bc3fb58434a73712ee0d2cb",
}


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def present(out, name):
    p = os.path.join(out, name)
    return os.path.isfile(p) and sha256(p) == SHA256[name]


def fetch(out):
    os.makedirs(out, exist_ok=True)
    for req, members in MODELS.items():
        names = [os.path.basename(m) for m in members]
        if all(present(out, n) for n in names):
            continue
        with tempfile.TemporaryDirectory() as tmp:
            r = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", tmp, req],
                               capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit("fetch_real_models: pip download %s failed: %s" % (req, r.stderr.strip()[-300:]))
            wheel = next(os.path.join(tmp, f) for f in os.listdir(tmp) if f.endswith(".whl"))
            with zipfile.ZipFile(wheel) as z:
                for m in members:
                    name = os.path.basename(m)
                    data = z.read(m)
                    got = hashlib.sha256(data).hexdigest()
                    if got != SHA256[name]:
                        sys.exit("fetch_real_models: %s from %s has sha256 %s, expected %s" % (name, req, got, SHA256[name]))
                    tmp_path = os.path.join(out, name + ".part")
                    with open(tmp_path, "wb") as f:
                        f.write(data)
                    os.replace(tmp_path, os.path.join(out, name))
    return {n: os.path.join(out, n) for n in SHA256}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default=DEFAULT_DIR)
    a = ap.parse_args()
    for name, path in fetch(a.dir).items():
        print("%s  %s" % (SHA256[name], path))


if __name__ == "__main__":
    main()
