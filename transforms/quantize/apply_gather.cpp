// Writing embedding-table points (see quantize/apply_gather.h).
#include "transforms/quantize/apply_gather.h"

#include <optional>
#include <vector>

#include "ir/errors.h"
#include "ir/shape_inference/ranks.h"
#include "transforms/common/rewrite.h"
#include "transforms/quantize/apply_util.h"

namespace mcc::transforms::quantize {

namespace {

/// The Gathers a gathered point names, each an axis-0 Gather reading `table` as its data.
std::vector<ir::Node*> table_gathers(const ir::Graph& g, const ir::Value& table, const QPoint& p) {
  if (p.consumers.empty()) throw ModelError("an embedding table point names no Gather");
  std::vector<ir::Node*> out;
  for (const std::string& label : p.consumers) {
    ir::Node* n = find_consumer(g, label);
    if (!n || !n->is("Gather") || n->input(0) != &table || n->attr_int("axis", 0) != 0)
      throw ModelError("consumer '" + label + "' is not an axis-0 Gather reading it as its table");
    out.push_back(n);
  }
  return out;
}

void write_table(ir::Graph& g, const ir::Ranks& ranks, std::set<std::string>& names, const QPoint& p) {
  if (p.role != Role::Weight || p.dtype != ir::DType::I8 || p.block_size > 0 || (p.axis != -1 && p.axis != 1))
    throw ModelError("an embedding table point is int8 with one scale per column (axis 1) or per table");
  ir::Value* table = g.find_value(p.tensor);
  if (!table || !table->initializer || table->initializer->dtype() != ir::DType::F32 || table->initializer->rank() != 2)
    throw ModelError("it is not a float32 constant [rows, width] of the main graph");
  check_channels(p, *table->initializer);
  const std::vector<ir::Node*> gathers = table_gathers(g, *table, p);
  // A shared copy: the float table is released below, once nothing reads it.
  ir::Value& codes = g.add_initializer(g.unique_name(p.tensor + "_quantized"), quantized_codes(ir::Tensor(*table->initializer), p));
  ir::Value& scale = g.add_initializer(g.unique_name(p.tensor + "_scale"), scale_tensor(p));
  ir::Value& zero_point = g.add_initializer(g.unique_name(p.tensor + "_zero_point"), zero_point_tensor(p));
  for (ir::Node* gather : gathers) {
    ir::Value& y = *gather->outputs.at(0);
    const std::string y_name = y.name, node_name = gather->name;
    ir::Value* ids = gather->input(1);
    const std::optional<int64_t> ids_rank = ranks.of(ids);
    ir::Node& gq = g.add_node("Gather", gather->domain, "", {&codes, ids}, {g.unique_name(y_name + "_quantized")}, gather);
    gq.attrs = gather->attrs;
    gq.since_version = gather->since_version;
    gq.doc_string = gather->doc_string;
    gq.metadata_props = gather->metadata_props;
    gq.outputs[0]->dtype = ir::DType::I8;
    gq.outputs[0]->shape = y.shape;
    ir::Node& dq = g.add_node("DequantizeLinear", "", unique_node_name(g, names, y_name + "_DequantizeLinear"),
                              {gq.outputs[0], &scale, &zero_point}, {g.unique_name(y_name + "_dequantized")}, gather);
    if (p.axis >= 0) dq.set_attr(ir::Attribute{"axis", ir::AttrKind::Int, ids_rank.value_or(-1), "", "", ""});
    dq.outputs[0]->dtype = ir::DType::F32;
    dq.outputs[0]->shape = y.shape;
    take_over_output(g, *gather, y, *dq.outputs[0]);
    gq.name = node_name;
  }
  drop_if_unused(table);
}

}  // namespace

std::set<std::string> write_gathered_points(ir::Model& model, const Plan& plan, std::set<std::string>& node_names) {
  std::set<std::string> written;
  std::optional<ir::Ranks> ranks;  // of the ids, read once the first table comes
  for (const QPoint& p : plan.points) {
    if (!p.gathered) continue;
    if (!ranks) ranks.emplace(model);
    try {
      write_table(*model.graph, *ranks, node_names, p);
    } catch (ModelError& e) {
      e.add_context("weight '" + p.tensor + "'");
      throw;
    }
    written.insert(p.tensor);
  }
  return written;
}

}  // namespace mcc::transforms::quantize
