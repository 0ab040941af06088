// `mcc quantize --mode weight_only` on the weight-only test block (tests/transforms/quantize/
// weight_only_block.h), checked three ways for each form: ONNX Runtime loads and runs the output
// close to its run of the float model (and onnx.checker full_check passes on the standard QDQ
// form), mcc's cpu backend matches ONNX Runtime on the output (mcc eval --golden), and `--state`
// replays the output byte for byte with no calibration data.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "ir/npy.h"
#include "ir/onnx_io.h"
#include "support/files.h"
#include "support/ort.h"
#include "support/run_mcc.h"
#include "transforms/quantize/weight_only_block.h"

namespace fs = std::filesystem;
using mcc::test::run_mcc;
using nlohmann::json;

namespace {

/// Cosine of ONNX Runtime's output `y` between two golden folders, sample by sample (the least).
double least_cosine(const fs::path& a_dir, const fs::path& b_dir, const char* y) {
  double least = 2;
  for (const auto& e : fs::directory_iterator(a_dir)) {
    const mcc::ir::Tensor a = mcc::ir::load_npy((e.path() / y).string());
    const mcc::ir::Tensor b = mcc::ir::load_npy((b_dir / e.path().filename() / y).string());
    REQUIRE(a.numel() == b.numel());
    double ab = 0, aa = 0, bb = 0;
    for (int64_t i = 0; i < a.numel(); ++i) {
      const double x = a.data<float>()[i], z = b.data<float>()[i];
      ab += x * z, aa += x * x, bb += z * z;
    }
    least = std::min(least, ab / std::sqrt(aa * bb));
  }
  return least;
}

/// The three checks of one weight-only output: replay, ONNX Runtime against fp32, cpu against ONNX Runtime.
void check_output(const mcc::test::TempDir& tmp, const std::string& model, const std::string& out, const std::string& tag,
                  double min_cosine, bool checker) {
  const std::string state = (tmp.path / (tag + ".mcc.json")).string();
  const auto rr = run_mcc({"quantize", model, "-o", (tmp.path / (tag + ".again.onnx")).string(), "--state", state});
  INFO(rr.err);
  REQUIRE(rr.code == 0);
  CHECK(mcc::test::slurp(tmp.path / (tag + ".again.onnx")) == mcc::test::slurp(out));

  REQUIRE_MESSAGE(mcc::test::have_onnxruntime(), mcc::test::kOrtMissing);
  if (checker) {
    const std::string cmd = "python3 -c \"import onnx, sys; onnx.checker.check_model(onnx.load(sys.argv[1]), full_check=True)\" '" +
                            out + "'";
    CHECK_MESSAGE(std::system(cmd.c_str()) == 0, "onnx.checker full_check refused " << out);
  }
  const fs::path gq = tmp.path / ("golden_" + tag), g32 = tmp.path / ("golden32_" + tag);
  mcc::test::write_weight_only_samples(gq, 3, 700);
  mcc::test::write_weight_only_samples(g32, 3, 700);
  REQUIRE(mcc::test::write_ort_outputs(out, gq.string()));
  REQUIRE(mcc::test::write_ort_outputs(model, g32.string()));
  const double c = least_cosine(gq, g32, "output_0.npy");
  MESSAGE(tag << ": ONNX Runtime, weight-only vs fp32 output cosine (least of 3) " << c);
  CHECK(c > min_cosine);
  CHECK(least_cosine(gq, g32, "output_1.npy") > 0.999999);  // the Gemm stays float
  const auto ev = run_mcc({"eval", out, "--golden", gq.string(), "--min-cosine", "0.99999", "--json"});
  INFO(ev.out << ev.err);
  CHECK(ev.code == 0);
}

/// The quantize stage's entry of a state; null when there is none.
const json* quantize_stage(const json& state) {
  for (const auto& st : state["stages"])
    if (st["pass"] == "quantize") return &st;
  return nullptr;
}

}  // namespace

TEST_CASE("quantize --mode weight_only: int4 RTN (QDQ, opset 21) and GPTQ as MatMulNBits: ONNX Runtime, cpu, replay") {
  mcc::test::TempDir tmp("mcc-quantize-weight-only");
  const std::string model = (tmp.path / "block.onnx").string();
  mcc::ir::save_model(mcc::test::weight_only_block(), model);

  SUBCASE("rtn, symmetric int4, DequantizeLinear(block_size), no data") {
    const std::string out = (tmp.path / "rtn.onnx").string();
    const auto r = run_mcc({"quantize", model, "-o", out, "--mode", "weight_only", "--block-size", "16", "--symmetric-weights"});
    INFO(r.err);
    REQUIRE(r.code == 0);
    const json state = json::parse(mcc::test::slurp(tmp.path / "rtn.mcc.json"));
    const json& st = state["stages"].back();
    CHECK(st["pass"] == "quantize");
    CHECK(st["options"]["mode"] == "weight_only");
    CHECK(st["stats"]["layers_weight_only"] == 2);
    CHECK(st["options"]["weight_zero_point"] == false);
    check_output(tmp, model, out, "rtn", 0.98, true);
  }
  SUBCASE("rtn by default: uint4 with zero points, full block ranges, DequantizeLinear(block_size)") {
    const std::string out = (tmp.path / "rtn_u4.onnx").string();
    const auto r = run_mcc({"quantize", model, "-o", out, "--mode", "weight_only", "--block-size", "16"});
    INFO(r.err);
    REQUIRE(r.code == 0);
    const json state = json::parse(mcc::test::slurp(tmp.path / "rtn_u4.mcc.json"));
    const json& st = state["stages"].back();
    CHECK(st["options"]["weight_zero_point"] == true);
    CHECK(st["options"]["scale_search"] == false);
    check_output(tmp, model, out, "rtn_u4", 0.98, true);
  }
  SUBCASE("gptq, uint4 with zero points, com.microsoft.MatMulNBits, calibrated") {
    mcc::test::write_weight_only_samples(tmp.path / "calib", 12, 40);
    const std::string out = (tmp.path / "gptq.onnx").string();
    const auto r = run_mcc({"quantize", model, "-o", out, "--mode", "weight_only", "--algorithm", "gptq", "--calib",
                            (tmp.path / "calib").string(), "--weight-format", "matmul_nbits", "--weight-zero-point",
                            "--block-size", "16"});
    INFO(r.err);
    REQUIRE(r.code == 0);
    const json state = json::parse(mcc::test::slurp(tmp.path / "gptq.mcc.json"));
    const json* q = quantize_stage(state);
    REQUIRE(q != nullptr);
    CHECK((*q)["record"]["weight_format"] == "matmul_nbits");
    CHECK((*q)["record"]["gptq"]["losses"].size() == 2);
    check_output(tmp, model, out, "gptq", 0.98, false);
  }
  SUBCASE("--ratio 0.5: the layer writing a graph output 8-bit, the rest by cost; 8-bit MatMulNBits runs") {
    const std::string out = (tmp.path / "mixed.onnx").string();
    const auto r = run_mcc({"quantize", model, "-o", out, "--mode", "weight_only", "--ratio", "0.5", "--block-size", "16",
                            "--weight-format", "matmul_nbits"});
    INFO(r.err);
    REQUIRE(r.code == 0);
    const json state = json::parse(mcc::test::slurp(tmp.path / "mixed.mcc.json"));
    const json* q = quantize_stage(state);
    REQUIRE(q != nullptr);
    const json& mixed = (*q)["record"]["mixed_bits"];
    CHECK(mixed["ratio"] == 0.5);
    CHECK(mixed["output_layers_8bit"] == json::array({"W"}));  // proj writes the graph output Y
    REQUIRE(mixed["weights"].size() == 1);                     // M alone competes: 1024 elements, none fit in 512
    CHECK(mixed["weights"][0]["bits"] == 4);
    std::map<std::string, std::string> dtypes;
    for (const auto& p : (*q)["record"]["points"]) dtypes[p["tensor"].get<std::string>()] = p["dtype"].get<std::string>();
    CHECK(dtypes["W"] == "u8");
    CHECK(dtypes["M"] == "u4");
    check_output(tmp, model, out, "mixed", 0.98, false);
  }
  SUBCASE("--ratio needs bits 4 and a share in [0, 1]") {
    for (const std::vector<std::string>& extra : {std::vector<std::string>{"--ratio", "1.5"}, {"--ratio", "0.5", "--bits", "8"}}) {
      std::vector<std::string> args{"quantize", model, "-o", (tmp.path / "bad.onnx").string(), "--mode", "weight_only"};
      args.insert(args.end(), extra.begin(), extra.end());
      const auto r = run_mcc(args);
      CHECK(r.code == 2);
      CHECK(r.err.find("ratio") != std::string::npos);
      CHECK_FALSE(fs::exists(tmp.path / "bad.onnx"));
    }
  }
  SUBCASE("--algorithm gptq without --calib is a usage error that writes nothing") {
    const std::string out = (tmp.path / "none.onnx").string();
    const auto r = run_mcc({"quantize", model, "-o", out, "--mode", "weight_only", "--algorithm", "gptq"});
    CHECK(r.code == 2);
    CHECK(r.err.find("--calib") != std::string::npos);
    CHECK_FALSE(fs::exists(out));
  }
}
