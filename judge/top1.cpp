// Top-1 accuracy against labels for `mcc eval` (see eval_top1.h).
#include "judge/top1.h"

#include <cstdio>

#include "backends/compare.h"
#include "ir/errors.h"
#include "ir/labels.h"

namespace mcc::judge {
namespace {

std::optional<int64_t> class_of(const backends::RValue& v) {
  if (v.kind != backends::RValue::Kind::Tensor || !v.tensor.defined()) return std::nullopt;
  return backends::top1_class(v.tensor);
}

double percent(int64_t part, int64_t whole) { return whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0; }

std::string fmt(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}

}  // namespace

double Top1Row::accuracy() const { return percent(correct, samples); }
double Top1Row::reference_accuracy() const { return percent(ref_correct, ref_samples); }

std::vector<int64_t> labels_for_samples(const std::string& path, const std::string& data_dir, size_t total, size_t used) {
  auto labels = ir::read_labels(path);
  if (labels.size() != total)
    throw ModelError(path + ": " + std::to_string(labels.size()) + " labels for " + std::to_string(total) +
                     " samples in '" + data_dir + "'; give one label per sample, in the samples' sorted order");
  labels.resize(used);
  return labels;
}

Top1Accuracy::Top1Accuracy(std::vector<int64_t> labels, std::vector<std::string> outputs) : labels_(std::move(labels)) {
  for (auto& o : outputs) rows_.push_back(Top1Row{std::move(o)});
}

void Top1Accuracy::add(size_t index, const std::vector<backends::RValue>& got,
                       const std::vector<std::optional<backends::RValue>>& want) {
  MCC_CHECK(index < labels_.size(), "top-1: sample index beyond the labels");
  const int64_t label = labels_[index];
  for (size_t k = 0; k < rows_.size() && k < got.size(); ++k) {
    const auto c = class_of(got[k]);
    if (!c) continue;
    auto& r = rows_[k];
    ++r.samples;
    r.correct += *c == label ? 1 : 0;
    if (k < want.size() && want[k]) {
      if (const auto rc = class_of(*want[k])) {
        ++r.ref_samples;
        r.ref_correct += *rc == label ? 1 : 0;
      }
    }
  }
}

std::vector<Top1Row> Top1Accuracy::finish(const Top1Limits& limits) const {
  std::vector<Top1Row> out;
  for (Top1Row r : rows_) {
    if (r.samples == 0) continue;
    if (limits.min_top1 && r.accuracy() < *limits.min_top1) {
      r.passed = false;
      r.why = "top-1 " + fmt(r.accuracy()) + " % < " + fmt(*limits.min_top1) + " %";
    }
    // A drop within 1e-9 points of the limit is rounding, not a miss.
    if (limits.max_drop && r.has_reference() && r.drop() > *limits.max_drop + 1e-9 && r.passed) {
      r.passed = false;
      r.why = "top-1 drop " + fmt(r.drop()) + " points > " + fmt(*limits.max_drop);
    }
    out.push_back(std::move(r));
  }
  if (out.empty())
    throw UsageError("--labels: no output holds class scores (a float tensor of shape [C] or [1,C], C >= 2)");
  return out;
}

nlohmann::ordered_json top1_json(const std::vector<Top1Row>& rows, const Top1Limits& limits, const std::string& labels_path) {
  nlohmann::ordered_json j{{"labels", labels_path}};
  if (limits.max_drop) j["max_drop_points"] = *limits.max_drop;
  if (limits.min_top1) j["min_top1_percent"] = *limits.min_top1;
  nlohmann::ordered_json outs = nlohmann::ordered_json::array();
  bool all = true;
  for (const auto& r : rows) {
    nlohmann::ordered_json o{{"name", r.output}, {"samples", r.samples}, {"correct", r.correct}, {"top1_percent", r.accuracy()}};
    if (r.has_reference())
      o.update(nlohmann::ordered_json{{"reference_correct", r.ref_correct},
                                      {"reference_top1_percent", r.reference_accuracy()},
                                      {"drop_points", r.drop()}});
    o["passed"] = r.passed;
    if (!r.passed) o["why"] = r.why;
    all = all && r.passed;
    outs.push_back(std::move(o));
  }
  j["outputs"] = std::move(outs);
  j["passed"] = all;
  return j;
}


}  // namespace mcc::judge
