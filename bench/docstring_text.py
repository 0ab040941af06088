#!/usr/bin/env python3
"""English evaluation text for language models, from the Python standard library's docstrings.

usage: python3 bench/docstring_text.py OUT_DIR [--bytes 4600] [--modules 15]

Writes OUT_DIR/<module>.txt: the docstrings (module, classes, functions; each over 200 characters)
of every second standard-library module (sorted by file name) whose docstrings hold over 6000
characters, in source order, cut to their first --bytes bytes of UTF-8, for --modules modules. With Python 3.11 that
is _pydecimal, argparse, codecs, difflib, ftplib, ipaddress, optparse, pdb, pkgutil, smtplib,
socketserver, statistics, textwrap, traceback and typing. Then tokenize them into sample folders
with ../shared/tools/smollm2/tokenize_text.py (its venv's python), e.g.

  OUT/venv/bin/python ../shared/tools/smollm2/tokenize_text.py evaldoc OUT_DIR/*.txt --max-samples 48

(48 windows of 256 tokens, 12,240 scored tokens, from Debian's /usr/bin/python3, 3.11.2, in the
measurements of docs/quantize.md). English prose about software, not licence text:
for perplexity on text the calibration (licence texts) did not see. Needs only the standard library.
"""
import argparse
import ast
import glob
import os
import sysconfig


def module_docstrings(path):
    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
    except (SyntaxError, UnicodeDecodeError, OSError):
        return ""
    docs = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            d = ast.get_docstring(node)
            if d and len(d) > 200:
                docs.append(d)
    return "\n\n".join(docs)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("--bytes", type=int, default=4600, help="bytes of UTF-8 kept per module (default 4600)")
    ap.add_argument("--modules", type=int, default=15, help="modules written (default 15)")
    a = ap.parse_args()
    stdlib = sysconfig.get_paths()["stdlib"]
    texts = [(p, module_docstrings(p)) for p in sorted(glob.glob(os.path.join(stdlib, "*.py")))]
    chosen = [(p, t) for p, t in texts if len(t) > 6000][::2][: a.modules]
    os.makedirs(a.out_dir, exist_ok=True)
    for p, t in chosen:
        name = os.path.basename(p)[:-3] + ".txt"
        with open(os.path.join(a.out_dir, name), "wb") as f:
            f.write(t.encode("utf-8")[: a.bytes])
    print("%d modules from %s -> %s: %s" % (len(chosen), stdlib, a.out_dir, ", ".join(os.path.basename(p)[:-3] for p, _ in chosen)))


if __name__ == "__main__":
    main()
