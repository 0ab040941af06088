// Rewrites for an opset raise (see common/opset_upgrade.h).
#include "transforms/common/opset_upgrade.h"

#include <algorithm>

#include "ir/op_facts.h"
#include "transforms/common/node_filter.h"

namespace mcc::transforms {

bool rewritten_on_raise(const std::string& op, int64_t at) {
  const auto changed = ir::changed_meaning_after_13(op);
  return at == 18 && changed && *changed == 18 && op.rfind("Reduce", 0) == 0;
}

int64_t upgrade_opset(ir::Graph& g, int64_t from, int64_t to) {
  if (!(from < 18 && to >= 18)) return 0;
  int64_t rewritten = 0;
  ir::for_each_graph(g, [&](ir::Graph& sg) {
    for (ir::Node* n : sg.nodes()) {
      if (!(n->domain.empty() || n->domain == "ai.onnx") || !rewritten_on_raise(n->op_type, 18) || !n->has_attr("axes"))
        continue;
      const std::vector<int64_t> axes = n->attr_ints("axes");
      n->attrs.erase(std::remove_if(n->attrs.begin(), n->attrs.end(), [](const ir::Attribute& a) { return a.name == "axes"; }),
                     n->attrs.end());
      ir::Value& av = sg.add_initializer(sg.unique_name(node_label(*n) + "_axes"),
                                         ir::Tensor::from_vector<int64_t>({static_cast<int64_t>(axes.size())}, axes));
      sg.set_input(*n, 1, &av);
      ++rewritten;
    }
  });
  return rewritten;
}

}  // namespace mcc::transforms
