// The stage registry and the list of built-in stages.
#include "transforms/pipeline/pass_registry.h"

#include <algorithm>
#include <cctype>

#include "ir/errors.h"
#include "transforms/check/check.h"
#include "transforms/fp16/fp16.h"
#include "transforms/fold/fold.h"
#include "transforms/prune/prune.h"
#include "transforms/quantize/quantize.h"

namespace mcc::transforms {

// One line per built-in stage, e.g. `r.add(fold::make_pass);` (declare the factory in the stage's
// own header and include it above). `mcc passes` and the spec parser pick a stage up from here.
void register_builtin_passes(PassRegistry& r) {
  r.add(fold::make_pass);
  r.add(fp16::make_pass);
  r.add(quantize::make_pass);
  r.add(prune::make_pass);
  r.add(check::make_pass);
}

const PassRegistry& builtin_passes() {
  static const PassRegistry registry = [] {
    PassRegistry r;
    register_builtin_passes(r);
    return r;
  }();
  return registry;
}

namespace {

/// Forwards to one shared stage object (for stages registered as an instance).
class SharedPass : public Pass {
 public:
  explicit SharedPass(std::shared_ptr<Pass> p) : p_(std::move(p)) {}
  const PassInfo& info() const override { return p_->info(); }
  PassResult run(ir::Model& model, PassContext& ctx) override { return p_->run(model, ctx); }

 private:
  std::shared_ptr<Pass> p_;
};

}  // namespace

void PassRegistry::check_new_name(const std::string& name) const {
  MCC_CHECK(!name.empty(), "a stage or bundle without a name");
  MCC_CHECK(!passes_.count(name) && !bundles_.count(name),
            "stage or bundle '" + name + "' registered twice");
}

void PassRegistry::add(PassFactory factory) {
  MCC_CHECK(factory != nullptr, "null stage factory");
  auto probe = factory();
  MCC_CHECK(probe != nullptr, "stage factory returned null");
  PassInfo info = probe->info();
  check_new_name(info.name);
  for (size_t i = 0; i < info.options.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      MCC_CHECK(info.options[i].key != info.options[j].key,
                "stage '" + info.name + "' declares option '" + info.options[i].key + "' twice");
  const std::string name = info.name;
  passes_.emplace(name, Entry{std::move(info), std::move(factory)});
}

void PassRegistry::add(std::unique_ptr<Pass> instance) {
  MCC_CHECK(instance != nullptr, "null stage");
  std::shared_ptr<Pass> shared(std::move(instance));
  add(PassFactory(
      [shared] { return std::unique_ptr<Pass>(std::make_unique<SharedPass>(shared)); }));
}

void PassRegistry::add_bundle(std::string name, std::string spec, std::string summary) {
  check_new_name(name);
  const std::string key = name;
  bundles_.emplace(key, Bundle{std::move(name), std::move(spec), std::move(summary)});
}

const PassInfo* PassRegistry::find(std::string_view name) const {
  const auto it = passes_.find(name);
  return it == passes_.end() ? nullptr : &it->second.info;
}

const Bundle* PassRegistry::find_bundle(std::string_view name) const {
  const auto it = bundles_.find(name);
  return it == bundles_.end() ? nullptr : &it->second;
}

std::unique_ptr<Pass> PassRegistry::create(std::string_view name) const {
  const auto it = passes_.find(name);
  if (it == passes_.end())
    throw UsageError("unknown stage '" + std::string(name) + "'" + did_you_mean(name, names()) +
                     "; run 'mcc passes' for the list");
  return it->second.factory();
}

std::vector<const PassInfo*> PassRegistry::list() const {
  std::vector<const PassInfo*> out;
  for (const auto& [name, e] : passes_) out.push_back(&e.info);
  return out;
}

std::vector<const Bundle*> PassRegistry::bundles() const {
  std::vector<const Bundle*> out;
  for (const auto& [name, b] : bundles_) out.push_back(&b);
  return out;
}

std::vector<std::string> PassRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& [name, e] : passes_) out.push_back(name);
  for (const auto& [name, b] : bundles_) out.push_back(name);
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (same ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

std::string nearest_name(std::string_view name, const std::vector<std::string>& candidates) {
  const std::string_view head = name.substr(0, name.find_first_of("-_"));
  std::string best;
  size_t best_d = 0;
  for (const auto& c : candidates) {
    const size_t d = edit_distance(name, c);
    const bool plausible =
        d <= std::max<size_t>(2, name.size() / 2) ||
        (!head.empty() && c.size() >= head.size() && c.compare(0, head.size(), head) == 0);
    if (plausible && (best.empty() || d < best_d)) {
      best = c;
      best_d = d;
    }
  }
  return best;
}

std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates) {
  const std::string n = nearest_name(name, candidates);
  return n.empty() ? "" : " (did you mean '" + n + "'?)";
}

}  // namespace mcc::transforms
