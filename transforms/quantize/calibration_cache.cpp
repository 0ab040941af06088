// Calibration statistics kept for the process while reuse is on (see calibration_cache.h).
#include "transforms/quantize/calibration_cache.h"

#include <mutex>

#include "ir/printer.h"

namespace mcc::transforms::quantize {
namespace {

struct Kept {
  std::mutex mutex;
  bool on = false;
  std::string key;
  std::optional<CalibrationResult> result;
  std::map<std::string, KeptCodes> codes;
};

Kept& kept() {
  static Kept k;
  return k;
}

void put_list(std::string& s, const char* what, const std::vector<std::string>& names) {
  s += what;
  s += ' ';
  s += std::to_string(names.size());
  for (const auto& n : names) {
    s += '\n';
    s += std::to_string(n.size());
    s += ':';
    s += n;
  }
  s += '\n';
}

}  // namespace

void set_calibration_reuse(bool on) {
  Kept& k = kept();
  std::lock_guard<std::mutex> lock(k.mutex);
  k.on = on;
  if (!on) {
    k.key.clear();
    k.result.reset();
    k.codes.clear();
  }
}

bool calibration_reuse() {
  Kept& k = kept();
  std::lock_guard<std::mutex> lock(k.mutex);
  return k.on;
}

CalibrationReuse::CalibrationReuse(bool on) : was_(calibration_reuse()) { set_calibration_reuse(on || was_); }
CalibrationReuse::~CalibrationReuse() { set_calibration_reuse(was_); }

std::string calibration_key(const ir::Model& model, const std::vector<std::string>& watch, const CalibrationConfig& cfg,
                            const std::string& samples_sha256) {
  std::string s = "model " + sha256_hex(ir::print_model(model)) + "\nsamples " + samples_sha256 + "\n";
  s += "threads " + std::to_string(cfg.threads) + "\n";
  put_list(s, "watch", watch);
  put_list(s, "channel_watch", cfg.channel_watch);
  put_list(s, "per_channel_watch", cfg.per_channel_watch);
  // Per-channel statistics get histograms only when asked (one per channel would be a lot of
  // memory), so for them the request decides.
  if (!cfg.per_channel_watch.empty()) s += cfg.histograms ? "per_channel_histograms 1\n" : "per_channel_histograms 0\n";
  return sha256_hex(s);
}

std::optional<CalibrationResult> kept_calibration(const std::string& key) {
  Kept& k = kept();
  std::lock_guard<std::mutex> lock(k.mutex);
  if (!k.on || k.key != key || !k.result) return std::nullopt;
  return k.result;
}

void keep_calibration(const std::string& key, const CalibrationResult& r) {
  Kept& k = kept();
  std::lock_guard<std::mutex> lock(k.mutex);
  if (!k.on) return;
  k.key = key;
  k.result = r;
}

std::optional<KeptCodes> kept_codes(const std::string& key) {
  Kept& k = kept();
  std::lock_guard<std::mutex> lock(k.mutex);
  const auto it = k.codes.find(key);
  if (!k.on || it == k.codes.end()) return std::nullopt;
  return it->second;
}

void keep_codes(const std::string& key, KeptCodes c) {
  Kept& k = kept();
  std::lock_guard<std::mutex> lock(k.mutex);
  if (k.on) k.codes[key] = std::move(c);
}

}  // namespace mcc::transforms::quantize
