#!/usr/bin/env python3
"""Runs the shell examples of README.md and docs/*.md so they cannot rot (ctest: docs, docs_gpu).

Fences:
  ```sh        run
  ```sh slow   not run: setup, build, the test suites, benchmarks (minutes each)
  ```sh gpu    run only with --gpu (the docs_gpu test); without a GPU that test exits 77 (skipped)
  ```text, ```json, ```yaml, ...   not shell: never run
A bare ``` or another shell fence (bash, shell, console, ...) is an error: every block says what it is.

Each page's blocks run in order, as bash, from one scratch directory that mirrors the repository
root (every top-level entry is a symlink, except build/, which holds only a link to the binary
under test as build/mcc), so the examples run as written from the root and what they write stays
in the scratch directory. '/tmp/' in a block is replaced by a scratch folder of the page's own.
A command (a line, with its '\\' continuations, or as many lines as bash needs to parse it) must
exit 0 unless its last line ends with '# exit N'; pipelines use pipefail.

Also checked: the first block of every docs/ page is a block that runs, and every relative link
([text](path#anchor)) names an existing file and, for .md files, an existing heading.

Usage: doc_examples.py --mcc build/mcc [--gpu] [FILE.md ...]    (default: README.md docs/*.md)
Prints one line per block and a summary; exit 0 when every block that ran passed, 1 otherwise,
77 with --gpu where there is no GPU.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHELL_LANGS = {"sh", "bash", "shell", "console", "zsh", "shell-session"}
TAGS = {"slow", "gpu"}
FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})\s*(.*)$")
EXPECT = re.compile(r"#\s*exit\s+(\d+)\s*$")
BLOCK_TIMEOUT_S = 180


class Block:
    def __init__(self, path, line, info, text):
        self.path, self.line, self.text = path, line, text
        words = info.split()
        self.lang = words[0] if words else ""
        self.tags = set(words[1:])

    def where(self):
        return f"{shown(self.path)}:{self.line}"

    def where_line(self, n):
        """The file position of line n (1-based) of the block's text."""
        return f"{shown(self.path)}:{self.line + n}"

    def runs(self):
        return self.lang == "sh" and "slow" not in self.tags


def shown(path):
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path


def parse_blocks(path):
    """Fenced blocks of a Markdown file, with the fence's indentation removed from their lines."""
    blocks, errors = [], []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = len(m.group(1)), m.group(2), m.group(3).strip()
        start = i + 1
        body = []
        i += 1
        while i < len(lines):
            close = FENCE.match(lines[i])
            if close and close.group(2)[0] == fence[0] and len(close.group(2)) >= len(fence) and not close.group(3).strip():
                break
            line = lines[i]
            body.append(line[indent:] if line[:indent].strip() == "" else line.lstrip())
            i += 1
        else:
            errors.append(f"{shown(path)}:{start}: unclosed fence")
        i += 1
        b = Block(path, start, info, "\n".join(body) + "\n")
        if not b.lang:
            errors.append(f"{b.where()}: a fence with no language; use ```text for output, ```sh for commands")
        elif b.lang in SHELL_LANGS and b.lang != "sh":
            errors.append(f"{b.where()}: ```{b.lang}: shell examples are ```sh (run), ```sh slow or ```sh gpu")
        elif b.lang == "sh" and not b.tags <= TAGS:
            errors.append(f"{b.where()}: unknown tag(s) {sorted(b.tags - TAGS)} (known: {sorted(TAGS)})")
        blocks.append(b)
    return blocks, errors


def slug(heading):
    """GitHub's anchor for a heading."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def check_links(path):
    errors = []
    text = path.read_text(encoding="utf-8")
    prose = re.sub(r"^( {0,3})(```|~~~).*?^\1\2", "", text, flags=re.S | re.M)
    for m in re.finditer(r"\[[^\]]*\]\(([^)\s]+)\)", prose):
        target = m.group(1)
        if re.match(r"[a-z]+:", target):
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        if not dest.exists():
            errors.append(f"{shown(path)}: link to a missing file: {target}")
            continue
        if anchor and dest.suffix == ".md":
            dest_text = re.sub(r"^( {0,3})(```|~~~).*?^\1\2", "", dest.read_text(encoding="utf-8"), flags=re.S | re.M)
            anchors = {slug(h) for h in re.findall(r"^#{1,6}\s+(.*)$", dest_text, flags=re.M)}
            if anchor not in anchors:
                errors.append(f"{shown(path)}: link to a missing heading: {target}")
    return errors


def commands(text):
    """Splits a block into commands: a line with its continuations, or as many lines as bash needs."""
    out, pending, first = [], [], 0
    lines = text.splitlines()
    for n, line in enumerate(lines, 1):
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if not pending:
            first = n
        pending.append(line)
        if line.endswith("\\"):
            continue
        src = "\n".join(pending)
        if subprocess.run(["bash", "-n"], input=src, text=True, capture_output=True).returncode == 0:
            out.append((first, src))
            pending = []
    if pending:
        out.append((first, "\n".join(pending)))  # bash reports the syntax error when it runs
    return out


def script_for(block, tmp):
    parts = ["set -o pipefail", "cd \"$MCC_DOC_ROOT\""]
    for n, src in commands(block.text):
        m = EXPECT.search(src.splitlines()[-1])
        want = int(m.group(1)) if m else 0
        src = src.replace("/tmp/", tmp + "/")
        first_line = src.splitlines()[0][:160].replace("'", "'\\''")
        parts.append(src)
        parts.append(f"rc=$?; if [ $rc -ne {want} ]; then echo '{block.where_line(n)}: exit '$rc', "
                     f"expected {want}: {first_line}' >&2; exit 1; fi")
    return "\n".join(parts) + "\n"


def make_root(scratch, mcc):
    """A directory that looks like the repository root, with build/mcc the binary under test."""
    root = scratch / "root"
    root.mkdir()
    for entry in ROOT.iterdir():
        if entry.name.startswith("build") or entry.name == ".git":
            continue
        (root / entry.name).symlink_to(entry)
    (root / "build").mkdir()
    (root / "build" / "mcc").symlink_to(Path(mcc).resolve())
    tmp = scratch / "tmp"
    tmp.mkdir()
    return root, tmp


def has_gpu():
    try:
        return subprocess.run(["nvidia-smi"], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def run_page(path, blocks, mcc, gpu_only):
    passed, failed = 0, []
    wanted = [b for b in blocks if b.runs() and (("gpu" in b.tags) == gpu_only)]
    if not wanted:
        return passed, failed
    scratch = Path(tempfile.mkdtemp(prefix="mcc-doc-"))
    try:
        root, tmp = make_root(scratch, mcc)
        env = dict(os.environ, MCC_DOC_ROOT=str(root), TMPDIR=str(tmp))
        for b in wanted:
            t0 = time.monotonic()
            try:
                r = subprocess.run(["bash", "-c", script_for(b, str(tmp))], env=env, cwd=root, stdin=subprocess.DEVNULL,
                                   capture_output=True, text=True, timeout=BLOCK_TIMEOUT_S)
                rc, out = r.returncode, r.stdout + r.stderr
            except subprocess.TimeoutExpired as e:
                rc, out = 124, f"timed out after {BLOCK_TIMEOUT_S} s\n{e.stdout or ''}{e.stderr or ''}"
            dt = time.monotonic() - t0
            if rc == 0:
                passed += 1
                print(f"  ok    {b.where()}  ({dt:.1f} s)")
            else:
                failed.append(b.where())
                print(f"  FAIL  {b.where()}  ({dt:.1f} s)")
                tail = out if len(out) < 4000 else "...\n" + out[-4000:]
                print("        " + tail.rstrip().replace("\n", "\n        "))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return passed, failed


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mcc", required=True, help="the mcc binary the examples run as build/mcc")
    ap.add_argument("--gpu", action="store_true", help="run only the ```sh gpu blocks (exit 77 without a GPU)")
    ap.add_argument("files", nargs="*", type=Path)
    args = ap.parse_args()
    if not Path(args.mcc).is_file():
        print(f"docs: no mcc binary at {args.mcc}", file=sys.stderr)
        return 1
    files = [f.resolve() for f in args.files] or [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

    pages, errors = [], []
    for f in files:
        blocks, errs = parse_blocks(f)
        errors += errs + check_links(f)
        if f.parent == ROOT / "docs" and not (blocks and blocks[0].runs() and "gpu" not in blocks[0].tags):
            errors.append(f"{f.relative_to(ROOT)}: the page's first block must be an example that runs (```sh)")
        pages.append((f, blocks))
    for e in errors:
        print(f"docs: {e}")

    all_blocks = [b for _, blocks in pages for b in blocks]
    gpu_blocks = [b for b in all_blocks if b.runs() and "gpu" in b.tags]
    slow = sum(1 for b in all_blocks if b.lang == "sh" and "slow" in b.tags)
    if args.gpu:
        if not has_gpu():
            print(f"docs: SKIPPED: {len(gpu_blocks)} block(s) need a GPU and nvidia-smi sees none: "
                  + ", ".join(b.where() for b in gpu_blocks))
            return 1 if errors else 77

    passed, failed = 0, []
    for f, blocks in pages:
        p, fl = run_page(f, blocks, args.mcc, args.gpu)
        passed += p
        failed += fl
    kind = "gpu blocks" if args.gpu else "blocks"
    print(f"docs: {passed} {kind} passed, {len(failed)} failed"
          + ("" if args.gpu else f"; not run: {slow} slow, {len(gpu_blocks)} gpu (test docs_gpu)")
          + f"; {len(errors)} page error(s)")
    return 1 if failed or errors else 0


if __name__ == "__main__":
    sys.exit(main())
