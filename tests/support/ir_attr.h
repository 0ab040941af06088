// A named IR attribute in one call, for tests that build graphs by hand.
#pragma once
#include <string>
#include <utility>

#include "ir/attribute.h"

namespace mcc::test {

/// An attribute `name` of kind `k` holding `v`, with no reference, doc string or passthrough.
inline ir::Attribute attr(std::string name, ir::AttrKind k, ir::AttrValue v) {
  ir::Attribute a;
  a.name = std::move(name);
  a.kind = k;
  a.value = std::move(v);
  return a;
}

}  // namespace mcc::test
