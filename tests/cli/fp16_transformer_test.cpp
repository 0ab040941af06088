// `mcc convert -p fp16` on a transformer-shaped block (tests/transforms/fp16/transformer_block.h):
// the embedding table is stored as float16, the -3.4e38 mask fill is clamped with a warning and a
// record in the sidecar state, `--state` replays the output byte for byte, ONNX Runtime loads and
// runs the output close to its run of the float32 model, and mcc's cpu backend matches ONNX
// Runtime on the output (mcc eval --golden with ONNX Runtime's outputs).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "ir/npy.h"
#include "ir/onnx_io.h"
#include "support/ort.h"
#include "support/run_mcc.h"
#include "transforms/fp16/transformer_block.h"

namespace fs = std::filesystem;
using mcc::test::run_mcc;
using nlohmann::json;

TEST_CASE("convert -p fp16 on a transformer block: float16 table, recorded mask clamp, replay, ONNX Runtime") {
  mcc::test::TempDir tmp("mcc-fp16-block");
  const std::string model = (tmp.path / "block.onnx").string();
  mcc::ir::save_model(mcc::test::transformer_block(), model);
  const std::string out = (tmp.path / "half.onnx").string();
  const auto r = run_mcc({"convert", model, "-o", out, "-p", "fp16"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.err.find("'M_big': 24 values clamped from") != std::string::npos);  // never silent

  const json state = json::parse(mcc::test::slurp(tmp.path / "half.mcc.json"));
  const json& st = state["stages"][0];
  REQUIRE(st["record"]["clamped"].size() == 1);
  CHECK(st["record"]["clamped"][0]["tensor"] == "M_big");
  CHECK(st["record"]["clamped"][0]["count"] == 24);
  CHECK(st["record"]["clamped"][0]["to"].get<double>() == -65504.0);
  CHECK(st["stats"]["constants_clamped"] == 1);
  CHECK(st["options"]["out_of_range"] == "clamp_masks");
  CHECK(st["options"]["convert_embeddings"] == true);

  const mcc::ir::Model half = mcc::ir::load_model(out);
  const mcc::ir::Value* e = half.graph->find_value("E");
  REQUIRE(e != nullptr);
  REQUIRE(e->initializer);
  CHECK(e->initializer->dtype() == mcc::ir::DType::F16);
  CHECK(e->initializer->bytes().size() == static_cast<size_t>(mcc::test::kVocab * mcc::test::kHidden * 2));

  // Replay: byte-identical.
  const std::string again = (tmp.path / "again.onnx").string();
  const auto rr = run_mcc({"convert", model, "-o", again, "--state", (tmp.path / "half.mcc.json").string()});
  INFO(rr.err);
  REQUIRE(rr.code == 0);
  CHECK(mcc::test::slurp(again) == mcc::test::slurp(out));

  // ONNX Runtime runs both models on the same ids.
  REQUIRE_MESSAGE(mcc::test::have_onnxruntime(), mcc::test::kOrtMissing);
  for (const char* dir : {"golden16", "golden32"}) {
    fs::create_directories(tmp.path / dir / "s0");
    mcc::ir::save_npy(mcc::test::transformer_block_ids(), (tmp.path / dir / "s0" / "ids.npy").string());
  }
  const std::string g16 = (tmp.path / "golden16").string(), g32 = (tmp.path / "golden32").string();
  REQUIRE(mcc::test::write_ort_outputs(out, g16));
  REQUIRE(mcc::test::write_ort_outputs(model, g32));
  for (const char* y : {"output_0.npy", "output_1.npy"}) {
    const mcc::ir::Tensor a = mcc::ir::load_npy((tmp.path / "golden16" / "s0" / y).string());
    const mcc::ir::Tensor b = mcc::ir::load_npy((tmp.path / "golden32" / "s0" / y).string());
    REQUIRE(a.dtype() == mcc::ir::DType::F32);
    REQUIRE(a.numel() == b.numel());
    double worst = 0;
    for (int64_t i = 0; i < a.numel(); ++i) {
      const float x = a.data<float>()[i], z = b.data<float>()[i];
      CHECK(std::isfinite(x));
      worst = std::max(worst, static_cast<double>(std::fabs(x - z)));
      // Masked keys (the last 3 of each row of 8) get exactly 0 probability in both.
      if (i % mcc::test::kSeq >= mcc::test::kSeq - mcc::test::kMaskedKeys) CHECK(x == 0.0f);
    }
    MESSAGE(std::string(y) << ": ONNX Runtime fp16 vs fp32, max |diff| " << worst);
    CHECK(worst < 2e-3);
  }
  // mcc's cpu backend on the fp16 model matches ONNX Runtime's outputs for it.
  const auto ev = run_mcc({"eval", out, "--golden", g16, "--min-cosine", "0.99999", "--json"});
  INFO(ev.out << ev.err);
  CHECK(ev.code == 0);
}
