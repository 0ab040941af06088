#!/usr/bin/python3
"""Exports small streaming models whose work sits inside ONNX Loop and If bodies, for
bench/cpu_vs_ort.py (seeded random weights; Debian's python3-torch: run with /usr/bin/python3).

  loop_gru_frames.onnx   a GRU cell written out (Linear, Sigmoid, Tanh) stepped over the frames of
                         its input in a scripted loop (ONNX Loop, trip count from the input's
                         length), each step's state through a LayerNorm and a Linear head
  loop_if_gate.onnx      the same loop with an If in its body: frames whose energy is below a
                         threshold skip the cell and keep the state (a VAD-like gate)
  if_vad_branches.onnx   a voice-activity model shaped like Silero VAD v5: an If on the sample
                         rate picks one of two branches, each an STFT as a strided 1-D conv, four
                         small 1-D convs with ReLU, an LSTM over the remaining frames and a 1x1
                         conv with a sigmoid; 576 samples (512 and 64 of context) per call at 16 kHz

usage: /usr/bin/python3 bench/export_loop_models.py [--out build/bench_models]
"""
import argparse
import math
import os

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class FrameGru(torch.nn.Module):
    def __init__(self, feat=64, hidden=128, classes=8, gate=False):
        super().__init__()
        self.x2h = torch.nn.Linear(feat, 3 * hidden)
        self.h2h = torch.nn.Linear(hidden, 3 * hidden)
        self.norm = torch.nn.LayerNorm(hidden)
        self.head = torch.nn.Linear(hidden, classes)
        self.hidden = hidden
        self.gate = gate

    def step(self, x, h):
        gx = self.x2h(x)
        gh = self.h2h(h)
        H = self.hidden
        r = torch.sigmoid(gx[:, :H] + gh[:, :H])
        z = torch.sigmoid(gx[:, H:2 * H] + gh[:, H:2 * H])
        n = torch.tanh(gx[:, 2 * H:] + r * gh[:, 2 * H:])
        return (1 - z) * n + z * h

    def forward(self, frames, h):
        outs = []
        for t in range(frames.size(1)):
            x = frames[:, t]
            if self.gate:
                if bool((x * x).mean() > 0.3):
                    h = self.step(x, h)
            else:
                h = self.step(x, h)
            outs.append(self.head(self.norm(h)))
        return torch.stack(outs, 1), h


class VadBranch(torch.nn.Module):
    """One sample rate's network: |STFT| (a fixed cos/sin basis as a strided conv), 4 conv+ReLU
    blocks, an LSTM carrying (h, c) between calls, a 1x1 conv head; the mean over frames."""

    def __init__(self, n_fft, hop, hidden=128):
        super().__init__()
        bins = n_fft // 2 + 1
        t = torch.arange(n_fft, dtype=torch.float32)
        f = torch.arange(bins, dtype=torch.float32).unsqueeze(1)
        window = 0.5 - 0.5 * torch.cos(2 * math.pi * t / n_fft)
        basis = torch.cat([torch.cos(2 * math.pi * f * t / n_fft), -torch.sin(2 * math.pi * f * t / n_fft)]) * window
        self.register_buffer("basis", basis.unsqueeze(1))
        self.bins, self.hop, self.pad = bins, hop, n_fft // 4
        chans = [(bins, hidden, 1), (hidden, 64, 2), (64, 64, 2), (64, hidden, 1)]
        self.encoder = torch.nn.ModuleList(torch.nn.Conv1d(i, o, 3, stride=s, padding=1) for i, o, s in chans)
        self.lstm = torch.nn.LSTM(hidden, hidden, batch_first=True)
        self.head = torch.nn.Conv1d(hidden, 1, 1)

    def forward(self, x, state):
        x = torch.nn.functional.pad(x.unsqueeze(1), (0, self.pad), mode="reflect")
        y = torch.nn.functional.conv1d(x, self.basis, stride=self.hop)
        re, im = y[:, :self.bins], y[:, self.bins:]
        z = torch.sqrt(re * re + im * im)
        for conv in self.encoder:
            z = torch.relu(conv(z))
        z, (h, c) = self.lstm(z.transpose(1, 2), (state[0:1], state[1:2]))
        p = torch.sigmoid(self.head(torch.relu(z).transpose(1, 2)))
        return p.mean(dim=2), torch.cat([h, c], 0)


class VadTwoRates(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.at16k = VadBranch(256, 128)
        self.at8k = VadBranch(128, 64)

    def forward(self, x, state, sr):
        if bool(sr == 16000):
            return self.at16k(x, state)
        return self.at8k(x, state)


def export_vad(path):
    torch.manual_seed(0)
    scripted = torch.jit.script(VadTwoRates().eval())
    x = torch.randn(1, 576)
    state = torch.zeros(2, 1, 128)
    sr = torch.tensor(16000, dtype=torch.int64)
    torch.onnx.export(scripted, (x, state, sr), path, input_names=["input", "state", "sr"],
                      output_names=["output", "stateN"], dynamic_axes={"input": {1: "samples"}}, opset_version=16)
    print("wrote", path)


def export(model, path):
    torch.manual_seed(0)
    scripted = torch.jit.script(model.eval())
    frames = torch.randn(1, 50, 64)
    h = torch.zeros(1, 128)
    torch.onnx.export(scripted, (frames, h), path, input_names=["frames", "h0"], output_names=["logits", "h"],
                      dynamic_axes={"frames": {1: "T"}}, opset_version=13)
    print("wrote", path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "bench_models"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    torch.manual_seed(0)
    export(FrameGru(), os.path.join(a.out, "loop_gru_frames.onnx"))
    torch.manual_seed(0)
    export(FrameGru(gate=True), os.path.join(a.out, "loop_if_gate.onnx"))
    export_vad(os.path.join(a.out, "if_vad_branches.onnx"))


if __name__ == "__main__":
    main()
