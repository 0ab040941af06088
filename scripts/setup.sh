#!/usr/bin/env bash
# Installs what mcc needs on Debian 12 (apt packages; onnx, onnxruntime and numpy for Python, and
# openvino when pip can install it), then builds it. Idempotent and non-interactive: installs only
# what is missing; uses sudo only when not root. MCC_SKIP_PIP=1 skips the Python packages (the C++
# build and tests do not need them).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export DEBIAN_FRONTEND=noninteractive

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

packages=(g++ cmake ninja-build pkg-config git ca-certificates
          libonnx-dev libprotobuf-dev protobuf-compiler libcli11-dev libeigen3-dev libspdlog-dev
          doctest-dev nlohmann-json3-dev libyaml-cpp-dev libonnx-testdata libssl-dev
          libjpeg62-turbo-dev libpng-dev python3 python3-pip
          clang libclang-rt-14-dev  # clang + libFuzzer runtime: scripts/fuzz.sh
          chromium)  # headless rendering test of eval's HTML report (tests/cli/html_report_test.cpp)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: apt packages already installed"
fi

if [ "${MCC_SKIP_PIP:-0}" != "1" ]; then
  if python3 -c 'import onnx, onnxruntime, numpy' 2>/dev/null; then
    echo "setup: python packages already installed"
  else
    echo "setup: pip install onnx onnxruntime numpy"
    # Debian 12 marks the system Python as externally managed (PEP 668).
    python3 -m pip install -q --break-system-packages onnx onnxruntime numpy ||
      python3 -m pip install -q onnx onnxruntime numpy ||
      echo "setup: warning: pip install failed; only tools that script ONNX Runtime need it" >&2
  fi
  # OpenVINO: optional (the 'runtimes' test also runs every compressed model in it when present).
  if python3 -c 'import openvino' 2>/dev/null; then
    echo "setup: openvino already installed"
  else
    echo "setup: pip install openvino"
    python3 -m pip install -q --break-system-packages openvino ||
      python3 -m pip install -q openvino ||
      echo "setup: ==== WARNING: pip install openvino failed: the 'runtimes' test will NOT check OpenVINO ====" >&2
  fi
fi

echo "setup: building"
"$root/scripts/build.sh" >/dev/null
echo "setup: built $root/build/mcc"
