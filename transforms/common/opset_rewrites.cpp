// The step lookup and the helpers the opset-raise rewrites share (see common/opset_rewrites.h).
#include "transforms/common/opset_rewrites.h"

#include <algorithm>

#include "transforms/common/node_filter.h"

namespace mcc::transforms {

const RaiseStep* raise_step(std::string_view op, int at) {
  for (const auto steps : {input_rewrite_steps(), op_rewrite_steps()})
    for (const RaiseStep& s : steps)
      if (s.op == op && s.at == at) return &s;
  return nullptr;
}

const ir::Tensor* constant_tensor(const ir::Value* v) {
  if (!v) return nullptr;
  if (v->initializer) return v->is_graph_input ? nullptr : &*v->initializer;
  const ir::Node* p = v->producer;
  return p && p->is("Constant") ? p->attr_tensor("value") : nullptr;
}

ir::Value& add_node_constant(ir::Graph& g, const ir::Node& n, std::string_view what, ir::Tensor t) {
  return g.add_initializer(g.unique_name(node_label(n) + "_" + std::string(what)), std::move(t));
}

ir::Tensor int64_vector(const std::vector<int64_t>& v) {
  return ir::Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v);
}

void drop_attrs(ir::Node& n, std::initializer_list<std::string_view> names) {
  n.attrs.erase(std::remove_if(n.attrs.begin(), n.attrs.end(),
                               [&](const ir::Attribute& a) {
                                 return std::find(names.begin(), names.end(), a.name) != names.end();
                               }),
                n.attrs.end());
}

void attr_to_input(ir::Graph& g, ir::Node& n, std::string_view attr, size_t index) {
  if (!n.has_attr(attr)) return;
  const std::vector<int64_t> values = n.attr_ints(attr);
  drop_attrs(n, {attr});
  g.set_input(n, index, &add_node_constant(g, n, attr, int64_vector(values)));
}

}  // namespace mcc::transforms
