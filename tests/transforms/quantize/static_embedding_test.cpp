// quantize in static mode on a transformer-shaped block: the Gather table becomes int8 per column
// (embeddings=true, the default in every mode), the Gather reads the codes and a DequantizeLinear
// follows it, the outputs stay close to the float model's, the record replays byte-identically
// with no data, and embeddings=false keeps the table float.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "ir/npy.h"
#include "ir/onnx_io.h"
#include "support/paths.h"
#include "transforms/fp16/transformer_block.h"
#include "transforms/quantize/quantize_test_util.h"

using namespace mcc;
using json = nlohmann::ordered_json;

namespace {

/// `n` samples of token ids (ids.npy, [1, kSeq] int64), each a different mix of the table's rows.
struct IdSamples {
  test::TempDir dir{"mcc-static-ids"};
  explicit IdSamples(int n) {
    for (int i = 0; i < n; ++i) {
      std::vector<int64_t> ids(static_cast<size_t>(test::kSeq));
      for (int64_t k = 0; k < test::kSeq; ++k) ids[static_cast<size_t>(k)] = (k * 7 + i * 5) % test::kVocab;
      const std::filesystem::path s = dir.path / ("s" + std::to_string(i));
      std::filesystem::create_directories(s);
      ir::save_npy(ir::Tensor::from_vector<int64_t>({1, test::kSeq}, ids), (s / "ids.npy").string());
    }
  }
  std::string path() const { return dir.path.string(); }
};

}  // namespace

TEST_CASE("quantize static: Gather tables become int8 codes read by the Gather, dequantized after it") {
  const IdSamples calib(6);
  ir::Model m = test::transformer_block();
  const auto want = test::run_cpu(m, test::transformer_block_feeds());
  const auto res = test::run_quantize(m, {{"calib", calib.path()}});
  CHECK(res.stats["embedding_tables"] == 1);
  CHECK(m.graph->find_value("E") == nullptr);  // the float table is gone
  const ir::Value* eq = m.graph->find_value("E_quantized");
  REQUIRE(eq != nullptr);
  CHECK(eq->initializer->dtype() == ir::DType::I8);
  const ir::Value* tok = m.graph->find_value("tok");
  REQUIRE(tok != nullptr);
  REQUIRE(tok->producer != nullptr);
  CHECK(tok->producer->op_type == "DequantizeLinear");
  const ir::Node* gather = tok->producer->inputs[0]->producer;
  REQUIRE(gather != nullptr);
  CHECK(gather->op_type == "Gather");
  CHECK(gather->inputs[0] == eq);
  const auto got = test::run_cpu(m, test::transformer_block_feeds());
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(test::cosine(got[i], want[i]) > 0.99);
  // The record alone rebuilds the same model.
  ir::Model again = test::transformer_block();
  test::run_quantize(again, {{"calib", calib.path()}}, &res.record);
  CHECK(ir::serialize_model(again) == ir::serialize_model(m));
  // embeddings=false: the table stays float32.
  ir::Model plain = test::transformer_block();
  const auto off = test::run_quantize(plain, {{"calib", calib.path()}, {"embeddings", "false"}});
  CHECK_FALSE(off.stats.contains("embedding_tables"));
  REQUIRE(plain.graph->find_value("E") != nullptr);
  CHECK(plain.graph->find_value("E")->initializer->dtype() == ir::DType::F32);
}
