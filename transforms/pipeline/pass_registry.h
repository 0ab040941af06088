// The stage registry: every stage a pipeline spec may name, looked up by name, listed sorted by
// name (`mcc passes`, "did you mean" suggestions), plus named bundles that expand to a pipeline.
// Built-in stages are added in transforms/pipeline/pass_registry.cpp, one line each; tests build their own
// registry with test-only stages.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "transforms/pipeline/pass.h"

namespace mcc::transforms {

/// Makes a fresh stage object; the pass manager makes one per pipeline stage.
using PassFactory = std::function<std::unique_ptr<Pass>()>;

/// A named pipeline ("-p default"), expanded in place where its name appears as a stage.
struct Bundle {
  std::string name, spec, summary;
};

class PassRegistry {
 public:
  /// Registers a stage under its PassInfo::name. A duplicate name or an empty name is a bug
  /// (InternalError). Accepted forms:
  ///   r.add<FoldPass>();                 r.add(fold::make_pass); (factory function)
  ///   r.add(std::make_unique<FoldPass>());                         (one shared instance)
  void add(PassFactory factory);
  void add(std::unique_ptr<Pass> instance);
  template <class P>
  void add() {
    add(PassFactory([] { return std::unique_ptr<Pass>(std::make_unique<P>()); }));
  }
  /// Registers a bundle. Its spec is parsed (against this registry) when it is used.
  void add_bundle(std::string name, std::string spec, std::string summary);

  /// nullptr when no stage has that name.
  const PassInfo* find(std::string_view name) const;
  const Bundle* find_bundle(std::string_view name) const;
  /// A fresh stage object; throws UsageError naming the nearest stage when unknown.
  std::unique_ptr<Pass> create(std::string_view name) const;
  /// Registered stages sorted by name.
  std::vector<const PassInfo*> list() const;
  std::vector<const Bundle*> bundles() const;
  /// Stage and bundle names, sorted (candidates for "did you mean").
  std::vector<std::string> names() const;

 private:
  struct Entry {
    PassInfo info;
    PassFactory factory;
  };
  void check_new_name(const std::string& name) const;
  std::map<std::string, Entry, std::less<>> passes_;
  std::map<std::string, Bundle, std::less<>> bundles_;
};

/// Adds every built-in stage (and bundle) to `r`.
void register_builtin_passes(PassRegistry& r);

/// The registry of built-in stages, built once on first use.
const PassRegistry& builtin_passes();

/// The candidate closest to `name` by edit distance (Levenshtein, case-insensitive), or "" when
/// none is close enough to be a plausible typo (distance above max(2, |name| / 2)) — except that a
/// candidate which starts with `name`'s first segment (before '-' or '_') is always plausible.
std::string nearest_name(std::string_view name, const std::vector<std::string>& candidates);

/// " (did you mean 'x'?)" or "" — for appending to an error message.
std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates);

}  // namespace mcc::transforms
