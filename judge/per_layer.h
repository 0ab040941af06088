// Per-layer diagnosis for `mcc eval --per-layer`: runs a model and its reference on the same
// samples, compares every intermediate tensor the two share BY VALUE NAME (the quantize stage keeps
// the original activation names on its dequantized tensors; fp16 keeps names too), and ranks where
// the error comes from.
//
// Per shared tensor, over all samples:
//   snr_db        = 10 log10(sum signal^2 / sum (got - want)^2), signal and noise powers summed over
//                   samples (an energy-weighted mean; one odd sample cannot dominate the ranking);
//   worst_snr_db  = the lowest per-sample SNR; min_cosine, max_abs: the worst sample's values.
// Both tensors are compared in f32, so an fp16/bf16 model compares with its fp32 reference.
//
// Error introduced at a layer vs inherited from its inputs: the producing compute node (Q/DQ/Cast
// chains skipped) reads some shared tensors; its inherited noise is the worst noise-to-signal
// power ratio among them (0 for graph inputs). Assuming independent noise adds in power,
//   introduced_nsr    = max(0, nsr_out - max(nsr_in)),  nsr = noise / signal = 10^(-snr_db / 10)
//   introduced_snr_db = -10 log10(introduced_nsr)       (+inf when the layer adds nothing)
// A layer that quantizes badly shows a low introduced SNR; the layers after it inherit its error
// and show a low SNR but a high introduced SNR.
//
// Exclusion suggestion: among layers the evaluated model quantizes (LayerStat::exclude_targets),
// those whose introduced noise stands out: introduced SNR below 30 dB and at least 10 dB below the
// median quantized layer, worst first, at most `max_exclude` nodes; when none stands out but the
// worst adds more than 1 % noise power (< 20 dB), that one. Names are node names (an unnamed node
// is named by its first output), which the quantize stage keeps and its exclude option accepts.
//
// Memory: the evaluated model's shared tensors are kept (as f32) for ONE sample, until the
// reference run of that sample compares and releases them; only running sums (and the reference's
// min/max) stay across samples.
#pragma once
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/executor.h"
#include "ir/graph.h"

namespace mcc::judge {

struct LayerStat {
  std::string value;                 // shared value name
  std::string node, op;              // producing compute node in the evaluated model
  std::string ref_node, ref_op;      // producing node in the reference model
  std::vector<std::string> inputs;   // shared values (or graph inputs) the compute node reads
  /// Nodes to exclude from quantization to remove this layer's introduced error: the compute node
  /// when a DequantizeLinear feeds it, plus, when the value itself is a dequantized activation, the
  /// nodes reading it (a QDQ pair on an activation belongs to its quantized consumers). Empty when
  /// the evaluated model does not quantize here (e.g. an fp16 model).
  std::vector<std::string> exclude_targets;
  int64_t order = 0;                 // position in the evaluated model's node order (tie-break)
  int samples = 0;
  double signal = 0, noise = 0;      // summed over samples
  double worst_snr_db = std::numeric_limits<double>::infinity();
  double min_cosine = 1, max_abs = 0;
  int64_t nan_inf_mismatch = 0;
  /// Smallest and largest finite reference value over all samples (+inf/-inf when none): the
  /// range a histogram of the reference activation needs (report/activation_histogram.h).
  double ref_min = std::numeric_limits<double>::infinity(), ref_max = -std::numeric_limits<double>::infinity();
  // Filled by rank_layers():
  double inherited_nsr = 0, introduced_nsr = 0;
  int rank = 0, introduced_rank = 0;  // 1-based; rank by snr_db, introduced_rank by introduced_nsr

  double nsr() const;                // noise / signal (0 when identical; +inf when signal is 0)
  double snr_db() const;             // pooled SNR
  double inherited_snr_db() const;
  double introduced_snr_db() const;
};

struct PerLayerReport {
  std::vector<LayerStat> layers;     // ranked worst SNR first
  int samples = 0;
  std::vector<std::string> skipped;  // "name: reason" for shared tensors that could not be compared
  std::vector<std::string> exclude;  // suggested node names, worst introduced error first
  std::string stage_option;          // ready-to-paste, e.g. quantize{exclude=conv3,conv7}
};

/// Computes inherited/introduced error and both ranks; sorts `layers` by pooled SNR (worst first,
/// then model order). Graph inputs count as exact; an input name missing from `layers` too.
void rank_layers(std::vector<LayerStat>& layers);

/// The exclusion rule above, applied to ranked layers; returns reference node names.
std::vector<std::string> choose_exclusions(const std::vector<LayerStat>& layers, size_t max_exclude);

/// `quantize{exclude=a,b}`: each name matched exactly (regex characters escaped), the list
/// quoted when the spec grammar needs it.
std::string exclusion_stage_option(const std::vector<std::string>& nodes);

class PerLayerComparator {
 public:
  /// Both models must outlive the comparator. Throws UsageError when they share no intermediate.
  PerLayerComparator(const ir::Model& model, const ir::Model& reference);

  /// Installs the observers. Per sample: run `model` first, then `reference`, then end_sample().
  void attach(backends::Executor& model_exec, backends::Executor& reference_exec);
  void end_sample();

  PerLayerReport finish(size_t max_exclude) const;

 private:
  void on_model_value(const ir::Value& v, const backends::RValue& rv);
  void on_reference_value(const ir::Value& v, const backends::RValue& rv);

  const ir::Model& model_;
  const ir::Model& reference_;
  std::vector<LayerStat> stats_;
  std::map<std::string, size_t, std::less<>> index_;  // shared name -> stats_ slot
  std::map<std::string, ir::Tensor, std::less<>> pending_;  // this sample's model tensors (f32)
  std::map<std::string, std::string, std::less<>> skipped_;
  int samples_ = 0;
};

/// JSON form: {samples, aggregation, layers: [...], skipped, exclude, stage_option}; `top` limits
/// the layers listed (0 = all).
nlohmann::ordered_json per_layer_json(const PerLayerReport& r, size_t top);

}  // namespace mcc::judge
