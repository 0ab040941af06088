// ONNX → IR import: parses a ModelProto streaming from the file (peak memory ≈ the model size:
// tensor bytes are moved out of protobuf strings, never copied), maps external data, resolves
// value names through graph scopes and sorts graphs topologically.
//
// Losslessness: every message is taken apart destructively. What the IR models is moved out;
// whatever remains (fields mcc does not model, optional fields present with their default value,
// unknown fields of newer ONNX releases) is serialized into the owner's `proto_passthrough` and
// merged back first on export, so presence and unknown fields survive without special cases.
// A value declared in several roles (input and output, output and value_info, a subgraph output
// naming an outer value) keeps each declaration as read in Graph::shared_decls.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/wire_format_lite.h>
#include <onnx/onnx-data_pb.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <charconv>
#include <climits>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <unordered_map>

#include "ir/import_limits.h"
#include "ir/onnx_io.h"
#include "ir/onnx_proto_util.h"
#include "ir/verifier.h"

namespace mcc::ir {
namespace {

namespace pb = google::protobuf;
namespace fs = std::filesystem;
using onnx_util::take_unknown_metadata;

// Moves an optional field into `dst` when it holds a non-default value; a field present with its
// default value stays in the message (and so in the passthrough bytes, keeping its presence).
#define MCC_TAKE_STRING(msg, field, dst)                    \
  do {                                                      \
    if ((msg).has_##field() && !(msg).field().empty()) {    \
      (dst) = std::move(*(msg).mutable_##field());          \
      (msg).clear_##field();                                \
    }                                                       \
  } while (0)
#define MCC_TAKE_SCALAR(msg, field, dst)                    \
  do {                                                      \
    if ((msg).has_##field() && (msg).field() != 0) {        \
      (dst) = (msg).field();                                \
      (msg).clear_##field();                                \
    }                                                       \
  } while (0)

bool float_is_default(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits == 0;  // -0.0 and NaN are values, not the default
}

std::string remainder(const pb::Message& m) {
  return m.ByteSizeLong() == 0 ? std::string() : onnx_util::serialize(m);
}

/// Initializer payloads the streaming parse read into buffers of their own pages (see
/// parse_model_stream), by the TensorProto they belong to (looked up, never iterated).
using PagePayloads = std::unordered_map<const onnx::TensorProto*, std::shared_ptr<Buffer>>;

struct ImportContext {
  std::string base_dir;
  const PagePayloads* payloads = nullptr;
  std::unordered_map<std::string, int64_t> opsets;  // domain ("" for ai.onnx) -> version
  int since_version(const std::string& domain) const {
    auto it = opsets.find(domain == "ai.onnx" ? std::string() : domain);
    return it == opsets.end() ? 0 : static_cast<int>(it->second);
  }
};

// ---------------------------------------------------------------- tensors

int64_t parse_i64(const std::string& s, const std::string& what) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0)
    throw ModelError("external data " + what + " '" + s + "' is not a non-negative integer");
  return v;
}

/// The location must stay inside the model's folder: no absolute paths, no '..' components.
void check_location(const std::string& loc) {
  if (loc.empty()) throw ModelError("external data has an empty location");
  const fs::path p(loc);
  if (p.is_absolute() || loc.front() == '/')
    throw ModelError("external data location '" + loc + "' is absolute; it must be relative to the model's folder");
  for (const auto& part : p)
    if (part == "..") throw ModelError("external data location '" + loc + "' escapes the model's folder ('..')");
}

std::shared_ptr<Buffer> map_external(onnx::TensorProto& tp, ExternalRef& ref, const ImportContext& ctx) {
  for (auto& e : *tp.mutable_external_data()) {
    const std::string& k = e.key();
    if (k == "location") ref.location = e.value();
    else if (k == "offset") ref.offset = parse_i64(e.value(), "offset");
    else if (k == "length") ref.length = parse_i64(e.value(), "length");
    else if (k == "checksum") ref.checksum = e.value();
    else ref.extra.emplace_back(k, e.value());
  }
  check_location(ref.location);
  const std::string path = (fs::path(ctx.base_dir) / ref.location).string();
  tp.clear_external_data();
  tp.clear_data_location();
  return map_file_range(path, static_cast<uint64_t>(ref.offset < 0 ? 0 : ref.offset), ref.length);
}

/// Element count a typed field must hold: one entry per element (two for complex), or one entry
/// per packed byte for 4-bit and 2-bit types.
size_t typed_count(DType dt, int64_t numel) {
  const int bits = info(dt).bits;
  if (dt == DType::C64 || dt == DType::C128) return static_cast<size_t>(numel) * 2;
  if (bits > 0 && bits < 8) return (static_cast<size_t>(numel) * static_cast<size_t>(bits) + 7) / 8;
  return static_cast<size_t>(numel);
}

/// Little-endian bytes of a typed field, each entry truncated to `width` bytes.
template <class Src>
std::shared_ptr<Buffer> pack_typed(const pb::RepeatedField<Src>& src, size_t expect, size_t width,
                                   const char* field) {
  if (static_cast<size_t>(src.size()) != expect)
    throw ModelError(std::string(field) + " holds " + std::to_string(src.size()) + " values, expected " +
                     std::to_string(expect));
  auto buf = make_owned_buffer(expect * width);
  std::byte* out = buf->mutable_data();
  if (width == sizeof(Src)) {
    if (expect) std::memcpy(out, src.data(), expect * width);
  } else {
    for (size_t i = 0; i < expect; ++i) {
      const auto v = static_cast<uint64_t>(src.Get(static_cast<int>(i)));
      std::memcpy(out + i * width, &v, width);  // little-endian host: low bytes first
    }
  }
  return buf;
}

/// Converts the typed field that matches the dtype into raw bytes and clears it; nullptr when
/// the dtype has no typed field with data (left to the caller).
std::shared_ptr<Buffer> take_typed(onnx::TensorProto& tp, DType dt, int64_t numel) {
  const size_t n = typed_count(dt, numel);
  const int bits = info(dt).bits;
  const size_t width = bits >= 8 ? static_cast<size_t>(bits) / 8 : 1;
  std::shared_ptr<Buffer> buf;
  switch (dt) {
    case DType::F32: case DType::C64:
      if (tp.float_data_size() == 0) return nullptr;
      buf = pack_typed(tp.float_data(), n, 4, "float_data");
      tp.clear_float_data();
      return buf;
    case DType::F64: case DType::C128:
      if (tp.double_data_size() == 0) return nullptr;
      buf = pack_typed(tp.double_data(), n, 8, "double_data");
      tp.clear_double_data();
      return buf;
    case DType::I64:
      if (tp.int64_data_size() == 0) return nullptr;
      buf = pack_typed(tp.int64_data(), n, 8, "int64_data");
      tp.clear_int64_data();
      return buf;
    case DType::U32: case DType::U64:
      if (tp.uint64_data_size() == 0) return nullptr;
      buf = pack_typed(tp.uint64_data(), n, width, "uint64_data");
      tp.clear_uint64_data();
      return buf;
    case DType::I32: case DType::I16: case DType::I8: case DType::U16: case DType::U8:
    case DType::Bool: case DType::F16: case DType::BF16: case DType::F8E4M3FN:
    case DType::F8E4M3FNUZ: case DType::F8E5M2: case DType::F8E5M2FNUZ: case DType::U4:
    case DType::I4: case DType::F4E2M1: case DType::F8E8M0: case DType::U2: case DType::I2:
      if (tp.int32_data_size() == 0) return nullptr;
      buf = pack_typed(tp.int32_data(), n, width, "int32_data");
      tp.clear_int32_data();
      return buf;
    default:
      return nullptr;  // unknown dtype: typed fields stay in the passthrough bytes
  }
}

Tensor import_tensor(onnx::TensorProto& tp, const ImportContext& ctx) {
  std::string name, doc;
  MCC_TAKE_STRING(tp, name, name);
  try {
    std::vector<int64_t> dims(tp.dims().begin(), tp.dims().end());
    tp.clear_dims();
    int32_t code = 0;
    MCC_TAKE_SCALAR(tp, data_type, code);
    const DType dt = static_cast<DType>(code);
    MCC_TAKE_STRING(tp, doc_string, doc);
    const int64_t numel = checked_numel(dims);
    const uint64_t claimed = limits::tensor_bytes(dt, dims);  // before any allocation
    const bool fixed_width = info(dt).bits > 0;

    Tensor t;
    std::optional<ExternalRef> ext;
    if (tp.data_location() == onnx::TensorProto::EXTERNAL) {
      if (dt == DType::String) throw ModelError("string tensors cannot use external data");
      ext.emplace();
      auto mapped = map_external(tp, *ext, ctx);
      if (fixed_width) limits::check_data_bytes(mapped->size(), claimed, "external data");
      t = Tensor::from_buffer(dt, std::move(dims), std::move(mapped));
    } else if (dt == DType::String) {
      std::vector<std::string> values;
      values.reserve(static_cast<size_t>(tp.string_data_size()));
      for (auto& s : *tp.mutable_string_data()) values.push_back(std::move(s));
      tp.clear_string_data();
      t = Tensor::from_strings(std::move(dims), std::move(values));
    } else {
      std::shared_ptr<Buffer> buf;
      const auto paged = ctx.payloads ? ctx.payloads->find(&tp) : PagePayloads::const_iterator();
      if (ctx.payloads && paged != ctx.payloads->end()) {
        if (fixed_width) limits::check_data_bytes(paged->second->size(), claimed, "raw_data");
        buf = paged->second;
        tp.clear_raw_data();
      } else if (tp.has_raw_data() && !tp.raw_data().empty()) {
        if (fixed_width) limits::check_data_bytes(tp.raw_data().size(), claimed, "raw_data");
        buf = make_owned_buffer(std::move(*tp.mutable_raw_data()));  // moved, not copied
        tp.clear_raw_data();
      } else {
        buf = take_typed(tp, dt, numel);
      }
      if (!buf) {
        if (info(dt).bits > 0 && numel > 0)
          throw ModelError("has no data (" + std::to_string(numel) + " elements of " + dtype_name(dt) + " declared)");
        buf = make_owned_buffer(std::string());
      }
      t = Tensor::from_buffer(dt, std::move(dims), std::move(buf));
    }
    t.external = std::move(ext);
    t.name = std::move(name);
    t.doc_string = std::move(doc);
    t.proto_passthrough = remainder(tp);
    return t;
  } catch (Error& e) {
    e.add_context("tensor '" + name + "'");
    throw;
  }
}

// ---------------------------------------------------------------- values and types

void import_type(onnx::TypeProto& tp, Value& v) {
  v.has_type = true;
  DType dt = DType::Undefined;
  Shape shape;
  if (onnx_util::decode_tensor_type(tp, dt, shape)) {
    v.dtype = dt;
    v.shape = std::move(shape);
    // Keep the original bytes when the IR form does not reproduce them exactly (denotation,
    // dim_param "", elem_type present but 0, unknown fields ...) and whenever the element type is
    // absent: export never writes a tensor type without an element type of its own making.
    onnx::TypeProto re;
    onnx_util::encode_tensor_type(v.dtype, v.shape, re);
    if (dt != DType::Undefined && onnx_util::serialize(re) == onnx_util::serialize(tp)) return;
  }
  v.type_passthrough.bytes = onnx_util::serialize(tp);  // sequence, map, optional, sparse ...
}

void import_value_info(onnx::ValueInfoProto& vi, Value& v) {
  if (!vi.name().empty()) vi.clear_name();
  if (vi.has_type() && vi.type().ByteSizeLong() == 0) {
    // `type {}` (no tensor, sequence... member: the type is unknown) has no bytes of its own to
    // keep as a type passthrough; it stays in the value info's passthrough, present and empty.
    v.has_type = true;
  } else if (vi.has_type()) {
    import_type(*vi.mutable_type(), v);
    vi.clear_type();
  }
  MCC_TAKE_STRING(vi, doc_string, v.doc_string);
  v.metadata_props = take_unknown_metadata(vi, onnx_util::kValueInfoMetadataField);
  v.proto_passthrough = remainder(vi);
}

// ---------------------------------------------------------------- graphs

void import_graph(onnx::GraphProto& gp, Graph& g, const ImportContext& ctx);

Attribute import_attribute(onnx::AttributeProto& ap, Graph& owner, const ImportContext& ctx) {
  Attribute a;
  MCC_TAKE_STRING(ap, name, a.name);
  MCC_TAKE_STRING(ap, doc_string, a.doc_string);
  MCC_TAKE_STRING(ap, ref_attr_name, a.ref_attr_name);
  if (ap.has_type() && ap.type() != onnx::AttributeProto::UNDEFINED) {
    a.kind = static_cast<AttrKind>(ap.type());
    ap.clear_type();
  }
  auto sub_graph = [&](onnx::GraphProto& gp) {
    auto sg = std::make_shared<Graph>(&owner);
    import_graph(gp, *sg, ctx);
    return sg;
  };
  try {
    switch (a.kind) {
      case AttrKind::Float: {
        float f = 0.0f;
        if (ap.has_f() && !float_is_default(ap.f())) { f = ap.f(); ap.clear_f(); }
        a.value = f;
        break;
      }
      case AttrKind::Int: { int64_t i = 0; MCC_TAKE_SCALAR(ap, i, i); a.value = i; break; }
      case AttrKind::String: { std::string s; MCC_TAKE_STRING(ap, s, s); a.value = std::move(s); break; }
      case AttrKind::Tensor:
        if (ap.has_t()) { a.value = import_tensor(*ap.mutable_t(), ctx); ap.clear_t(); }
        else a.value = Tensor();
        break;
      case AttrKind::Graph:
        if (ap.has_g()) { a.value = sub_graph(*ap.mutable_g()); ap.clear_g(); }
        else a.value = std::shared_ptr<Graph>();
        break;
      case AttrKind::SparseTensor:
        if (ap.has_sparse_tensor()) { a.value = OpaqueProto{onnx_util::serialize(ap.sparse_tensor())}; ap.clear_sparse_tensor(); }
        break;
      case AttrKind::TypeProto:
        if (ap.has_tp()) { a.value = OpaqueProto{onnx_util::serialize(ap.tp())}; ap.clear_tp(); }
        break;
      case AttrKind::Floats:
        a.value = std::vector<float>(ap.floats().begin(), ap.floats().end());
        ap.clear_floats();
        break;
      case AttrKind::Ints:
        a.value = std::vector<int64_t>(ap.ints().begin(), ap.ints().end());
        ap.clear_ints();
        break;
      case AttrKind::Strings: {
        std::vector<std::string> v;
        for (auto& s : *ap.mutable_strings()) v.push_back(std::move(s));
        ap.clear_strings();
        a.value = std::move(v);
        break;
      }
      case AttrKind::Tensors: {
        std::vector<Tensor> v;
        for (auto& t : *ap.mutable_tensors()) v.push_back(import_tensor(t, ctx));
        ap.clear_tensors();
        a.value = std::move(v);
        break;
      }
      case AttrKind::Graphs: {
        std::vector<std::shared_ptr<Graph>> v;
        for (auto& gp : *ap.mutable_graphs()) v.push_back(sub_graph(gp));
        ap.clear_graphs();
        a.value = std::move(v);
        break;
      }
      case AttrKind::SparseTensors: case AttrKind::TypeProtos: {
        std::vector<OpaqueProto> v;
        if (a.kind == AttrKind::SparseTensors) {
          for (const auto& s : ap.sparse_tensors()) v.push_back({onnx_util::serialize(s)});
          ap.clear_sparse_tensors();
        } else {
          for (const auto& s : ap.type_protos()) v.push_back({onnx_util::serialize(s)});
          ap.clear_type_protos();
        }
        a.value = std::move(v);
        break;
      }
      default:
        break;  // undefined or newer kind: everything stays in the passthrough bytes
    }
  } catch (Error& e) {
    e.add_context("attribute '" + a.name + "'");
    throw;
  }
  a.proto_passthrough = remainder(ap);
  return a;
}

Value& find_or_fail(Graph& g, const std::string& name, const std::string& what) {
  Value* v = g.lookup(name);
  if (!v) throw ModelError(what + " '" + name + "' is not defined in graph '" + g.name + "' or an enclosing graph");
  return *v;
}

/// Names declared more than once in this graph (as input, output or value_info).
std::set<std::string, std::less<>> repeated_declarations(const onnx::GraphProto& gp) {
  std::map<std::string_view, int> seen;
  std::set<std::string, std::less<>> out;
  auto count = [&](const auto& list) {
    for (const auto& vi : list)
      if (++seen[vi.name()] == 2) out.insert(vi.name());
  };
  count(gp.input());
  count(gp.output());
  count(gp.value_info());
  return out;
}

/// Keeps the declaration as read when its value holds another one too (Graph::shared_decls).
void keep_shared_decl(Graph& g, const char* role, const onnx::ValueInfoProto& vi,
                      const std::set<std::string, std::less<>>& repeated, bool outer_value = false) {
  if (outer_value || repeated.count(vi.name()))
    g.shared_decls[vi.name()].by_role[role] = onnx_util::serialize(vi);
}

void import_graph(onnx::GraphProto& gp, Graph& g, const ImportContext& ctx) {
  MCC_TAKE_STRING(gp, name, g.name);
  MCC_TAKE_STRING(gp, doc_string, g.doc_string);
  try {
    const auto repeated = repeated_declarations(gp);
    for (auto& vi : *gp.mutable_input()) {
      keep_shared_decl(g, "input", vi, repeated);
      Value& v = g.add_value(vi.name());
      v.is_graph_input = true;
      import_value_info(vi, v);
      g.inputs.push_back(&v);
    }
    gp.clear_input();

    for (auto& tp : *gp.mutable_initializer()) {
      Tensor t = import_tensor(tp, ctx);
      Value* v = g.find_value(t.name);
      if (v && v->is_graph_input && !v->initializer) {  // IR < 4 style: initializer also an input
        v->initializer = std::move(t);
        g.initializers.push_back(v);
      } else {
        if (v) throw ModelError("initializer '" + t.name + "' is defined twice");
        std::string name = t.name;
        g.add_initializer(std::move(name), std::move(t));
      }
      tp.Clear();  // release what protobuf still holds as soon as possible
    }
    gp.clear_initializer();

    for (const auto& sp : gp.sparse_initializer()) {
      g.sparse_initializers.push_back({onnx_util::serialize(sp)});
      // The name is defined in this scope (nodes may use it); the data stays opaque.
      if (!sp.values().name().empty() && !g.find_value(sp.values().name())) g.add_value(sp.values().name());
    }
    gp.clear_sparse_initializer();

    // Nodes: create all outputs first, so inputs may refer to nodes later in the list (unsorted
    // graphs) and subgraphs may capture any value of this scope.
    std::vector<Node*> nodes;
    nodes.reserve(static_cast<size_t>(gp.node_size()));
    for (auto& np : *gp.mutable_node()) {
      std::string name, op_type, domain;
      MCC_TAKE_STRING(np, name, name);
      MCC_TAKE_STRING(np, op_type, op_type);
      MCC_TAKE_STRING(np, domain, domain);
      std::vector<std::string> outs(np.output().begin(), np.output().end());
      np.clear_output();
      const std::string label = "node '" + name + "' (" + op_type + ")";
      Node* created = nullptr;
      try {
        created = &g.add_node(std::move(op_type), std::move(domain), std::move(name), {}, outs);
      } catch (Error& e) {
        e.add_context(label);
        throw;
      }
      Node& n = *created;
      n.since_version = ctx.since_version(n.domain);
      nodes.push_back(&n);
    }
    for (int i = 0; i < gp.node_size(); ++i) {
      onnx::NodeProto& np = *gp.mutable_node(i);
      Node& n = *nodes[static_cast<size_t>(i)];
      try {
        for (int k = 0; k < np.input_size(); ++k) {
          const std::string& in = np.input(k);
          g.set_input(n, static_cast<size_t>(k), in.empty() ? nullptr : &find_or_fail(g, in, "input"));
        }
        np.clear_input();
        for (auto& ap : *np.mutable_attribute()) n.attrs.push_back(import_attribute(ap, g, ctx));
        np.clear_attribute();
      } catch (Error& e) {
        e.add_context(n.describe());
        throw;
      }
      MCC_TAKE_STRING(np, doc_string, n.doc_string);
      n.metadata_props = take_unknown_metadata(np, onnx_util::kNodeMetadataField);
      n.proto_passthrough = remainder(np);
    }
    gp.clear_node();

    for (auto& vi : *gp.mutable_output()) {
      Value& v = find_or_fail(g, vi.name(), "graph output");
      // An output that is an outer-scope value keeps the outer value's own type info.
      keep_shared_decl(g, "output", vi, repeated, v.owner != &g);
      if (v.owner == &g) import_value_info(vi, v);
      g.outputs.push_back(&v);
    }
    gp.clear_output();

    for (auto& vi : *gp.mutable_value_info()) {
      Value* v = g.find_value(vi.name());
      if (!v) v = &g.add_value(vi.name());  // annotation of a value this graph does not define
      keep_shared_decl(g, "value_info", vi, repeated);
      import_value_info(vi, *v);
      g.value_info.push_back(v);
    }
    gp.clear_value_info();

    for (const auto& qa : gp.quantization_annotation()) g.quantization_annotation.push_back({onnx_util::serialize(qa)});
    gp.clear_quantization_annotation();
    g.metadata_props = take_unknown_metadata(gp, onnx_util::kGraphMetadataField);
    g.proto_passthrough = remainder(gp);
    g.topo_sort();
  } catch (Error& e) {
    e.add_context("graph '" + g.name + "'");
    throw;
  }
}

Model import_model(onnx::ModelProto& mp, const std::string& base_dir, const PagePayloads* payloads) {
  if (!mp.has_graph()) throw ModelError("not an ONNX model: it has no graph");
  Model m;
  m.base_dir = base_dir;
  MCC_TAKE_SCALAR(mp, ir_version, m.ir_version);
  MCC_TAKE_STRING(mp, producer_name, m.producer_name);
  MCC_TAKE_STRING(mp, producer_version, m.producer_version);
  MCC_TAKE_STRING(mp, domain, m.domain);
  MCC_TAKE_SCALAR(mp, model_version, m.model_version);
  MCC_TAKE_STRING(mp, doc_string, m.doc_string);
  if (m.ir_version > 10) spdlog::debug("model IR version {} is newer than 10; loading it anyway", m.ir_version);

  ImportContext ctx;
  ctx.base_dir = base_dir;
  ctx.payloads = payloads;
  // opset_import stays in the passthrough bytes too (field presence, unknown fields); export
  // rewrites it only when the IR's list differs.
  for (const auto& o : mp.opset_import()) {
    m.opset_imports.push_back({o.domain(), o.version()});
    ctx.opsets.emplace(o.domain() == "ai.onnx" ? std::string() : o.domain(), o.version());
  }
  for (const auto& p : mp.metadata_props()) m.metadata_props.emplace_back(p.key(), p.value());
  mp.clear_metadata_props();
  for (const auto& f : mp.functions()) m.functions.push_back({onnx_util::serialize(f)});
  mp.clear_functions();
  for (const auto& t : mp.training_info()) m.training_info.push_back({onnx_util::serialize(t)});
  mp.clear_training_info();

  std::unique_ptr<onnx::GraphProto> gp(mp.release_graph());
  m.graph = std::make_unique<Graph>();
  import_graph(*gp, *m.graph, ctx);
  gp.reset();
  // Outer values get their own declarations after their subgraphs are read: fingerprints last.
  for_each_graph(*m.graph, [](Graph& g) {
    for (auto& [name, decl] : g.shared_decls)
      if (const Value* v = g.lookup(name)) decl.fingerprint = onnx_util::declaration_fingerprint(*v);
  });
  m.proto_passthrough = remainder(mp);
  return m;
}

/// Runs `f`, turning every failure into one ModelError line that names the file.
template <class F>
auto with_file_context(const std::string& what, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (Error& e) {
    e.add_context(what);
    throw;
  } catch (const std::bad_alloc&) {
    throw ModelError(what + ": out of memory while reading (corrupt sizes?)");
  } catch (const std::exception& e) {
    throw ModelError(what + ": " + e.what());
  }
}

/// Opens `path` for streaming parse; checks it is a non-empty regular file below 2 GB.
int open_for_parse(const std::string& path, const char* kind) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw ModelError(std::string("cannot open ") + kind + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw ModelError(std::string("not a regular file"));
  }
  if (st.st_size == 0) {
    ::close(fd);
    throw ModelError(std::string("the file is empty (0 bytes), not an ONNX ") + kind);
  }
  if (st.st_size > INT_MAX) {
    ::close(fd);
    throw ModelError("the file is " + std::to_string(st.st_size) +
                     " bytes; protobuf files are limited to 2 GB (large weights must use external data)");
  }
  return fd;
}

/// Streaming parse from a file descriptor (never reads the whole file into one string first).
bool parse_fd(int fd, pb::Message& msg) {
  pb::io::FileInputStream fis(fd, 1 << 20);
  pb::io::CodedInputStream cis(&fis);
  cis.SetTotalBytesLimit(INT_MAX);
  const bool ok = msg.ParsePartialFromCodedStream(&cis) && cis.ConsumedEntireMessage() && fis.GetErrno() == 0;
  ::close(fd);
  return ok;
}

// ModelProto streaming parse. Main-graph initializers' raw_data is read straight into a string
// of its final size (protobuf's own parser grows strings over 50 MB step by step, copying them
// and touching up to twice the memory); every other field goes through protobuf unchanged, in
// file order, so merge semantics and unknown fields are exactly protobuf's.
using pb::internal::WireFormatLite;
constexpr uint32_t kLenTag(int field) { return static_cast<uint32_t>(field) << 3 | 2; }

/// Parses the message under the current limit: `special` fields get `on_special`, the others
/// are re-encoded (in order) and merged into msg at the end.
template <class F>
bool parse_fields(pb::io::CodedInputStream& cis, pb::Message& msg, uint32_t special, F&& on_special) {
  std::string rest;
  {
    pb::io::StringOutputStream sos(&rest);
    pb::io::CodedOutputStream out(&sos);
    for (;;) {
      const uint32_t tag = cis.ReadTag();
      if (tag == 0) break;
      if (tag == special) {
        uint32_t len = 0;
        // Lengths beyond the bytes left fail before anything is allocated.
        if (!cis.ReadVarint32(&len) || static_cast<int>(len) < 0 ||
            static_cast<int64_t>(len) > cis.BytesUntilTotalBytesLimit() ||
            (cis.BytesUntilLimit() >= 0 && static_cast<int64_t>(len) > cis.BytesUntilLimit()))
          return false;
        const auto lim = cis.PushLimit(static_cast<int>(len));
        if (!on_special(static_cast<int>(len)) || cis.BytesUntilLimit() != 0) return false;
        cis.PopLimit(lim);
      } else if (!WireFormatLite::SkipField(&cis, tag, &out)) {
        return false;
      }
    }
    if (out.HadError()) return false;
  }
  if (!cis.ConsumedEntireMessage()) return false;
  return rest.empty() || msg.MergeFromString(rest);
}

/// Payloads of kPageBufferMinBytes or more get pages of their own (make_page_buffer): the weights
/// of a model loaded late in a process (the self-check's reference) would otherwise land in
/// malloc's heap, whose freed pages it does not give back, and stay resident after the model is
/// dropped.
constexpr int kPagePayloadBytes = static_cast<int>(kPageBufferMinBytes);

bool parse_model_stream(pb::io::CodedInputStream& cis, onnx::ModelProto& mp, PagePayloads& payloads) {
  auto tensor = [&](onnx::TensorProto& tp) {
    return parse_fields(cis, tp, kLenTag(9), [&](int len) {
      if (len >= kPagePayloadBytes) {
        std::shared_ptr<Buffer> buf = make_page_buffer(static_cast<size_t>(len));
        if (!cis.ReadRaw(buf->mutable_data(), len)) return false;
        tp.set_raw_data(std::string());  // present; the bytes are in `payloads` (the last one wins)
        payloads[&tp] = std::move(buf);
        return true;
      }
      std::string raw;
      raw.resize(static_cast<size_t>(len));
      if (!cis.ReadRaw(raw.data(), len)) return false;
      tp.set_raw_data(std::move(raw));
      payloads.erase(&tp);
      return true;
    });
  };
  auto graph = [&](onnx::GraphProto& gp) {
    return parse_fields(cis, gp, kLenTag(5), [&](int) { return tensor(*gp.add_initializer()); });
  };
  return parse_fields(cis, mp, kLenTag(7), [&](int) { return graph(*mp.mutable_graph()); });
}

bool parse_model_fd(int fd, onnx::ModelProto& mp, PagePayloads& payloads) {
  struct stat st {};
  ::fstat(fd, &st);  // open_for_parse checked it: a regular file under 2 GB
  pb::io::FileInputStream fis(fd, 1 << 20);
  pb::io::CodedInputStream cis(&fis);
  // One past what the file holds: end of file stays a normal end of message, and no length in the
  // file can make the parser allocate more than the file could fill.
  cis.SetTotalBytesLimit(static_cast<int>(std::min<int64_t>(st.st_size + 1, INT_MAX)));
  const bool ok = parse_model_stream(cis, mp, payloads) && fis.GetErrno() == 0;
  ::close(fd);
  return ok;
}

std::string folder_of(const std::string& path) {
  const fs::path p = fs::path(path).parent_path();
  return p.empty() ? std::string(".") : p.string();
}

}  // namespace

Model load_model(const std::string& path) {
  return with_file_context("model '" + path + "'", [&] {
    onnx::ModelProto mp;
    PagePayloads payloads;
    if (!parse_model_fd(open_for_parse(path, "model"), mp, payloads))
      throw ModelError("not a valid ONNX model (protobuf parse failed: " + limits::parse_failure_hint() + ")");
    Model m = import_model(mp, folder_of(path), &payloads);
#ifndef NDEBUG
    verify(m);  // debug builds check the IR invariants right after import
#endif
    return m;
  });
}

Model load_model_from_bytes(std::string bytes, const std::string& base_dir) {
  return with_file_context("model bytes", [&] {
    if (bytes.empty()) throw ModelError("empty input, not an ONNX model");
    onnx::ModelProto mp;
    {
      pb::io::ArrayInputStream ais(bytes.data(), static_cast<int>(bytes.size()));
      pb::io::CodedInputStream cis(&ais);
      cis.SetTotalBytesLimit(INT_MAX);
      if (!mp.ParsePartialFromCodedStream(&cis) || !cis.ConsumedEntireMessage())
        throw ModelError("not a valid ONNX model (protobuf parse failed: " + limits::parse_failure_hint() + ")");
    }
    std::string().swap(bytes);  // the parsed message holds its own copy
    return import_model(mp, base_dir, nullptr);
  });
}

namespace {

// Reads a TensorProto file. Sequence/optional/map test data (same field numbers, other meanings)
// may parse as a TensorProto: anything odd is checked against SequenceProto and refused, as
// unsupported when no type is declared, as a mismatch (ModelError) when `declared` names the
// tensor value the model expects there.
Tensor read_tensor_file(const std::string& path, const Value* declared) {
  auto container = [&] {
    onnx::SequenceProto sp;
    return parse_fd(open_for_parse(path, "tensor"), sp) && sp.unknown_fields().empty() &&
           sp.has_elem_type() && sp.elem_type() >= 0 && sp.elem_type() <= 5;
  };
  auto refuse = [&]() -> void {
    if (declared)
      throw ModelError("holds a SequenceProto/OptionalProto/MapProto, but the model declares a tensor for '" +
                       declared->name + "'");
    throw UnsupportedError("holds a SequenceProto/OptionalProto/MapProto; only TensorProto files are supported");
  };
  onnx::TensorProto tp;
  const bool ok = parse_fd(open_for_parse(path, "tensor"), tp);
  if (ok && tp.unknown_fields().empty() && !tp.has_segment()) {
    ImportContext ctx;
    ctx.base_dir = folder_of(path);
    try {
      return import_tensor(tp, ctx);
    } catch (const ModelError&) {
      if (!container()) throw;
    }
    refuse();
  }
  if (container()) refuse();
  throw ModelError("not a valid TensorProto (protobuf parse failed: truncated or corrupt file)");
}

}  // namespace

Tensor load_tensor_pb(const std::string& path) {
  return with_file_context("tensor file '" + path + "'", [&] { return read_tensor_file(path, nullptr); });
}

namespace {

// The declared kind of a value: 1 tensor, 4 sequence (of tensors), 9 optional; 0 unknown.
int declared_kind(const Value& v, int* optional_elem) {
  *optional_elem = 0;
  if (v.type_passthrough.bytes.empty()) return 1;
  onnx::TypeProto tp;
  if (!tp.ParseFromString(v.type_passthrough.bytes)) return 0;
  if (tp.has_tensor_type()) return 1;
  if (tp.has_sequence_type()) return tp.sequence_type().elem_type().has_tensor_type() ? 4 : 0;
  if (tp.has_optional_type()) {
    const auto& e = tp.optional_type().elem_type();
    *optional_elem = e.has_tensor_type() ? 1 : (e.has_sequence_type() ? 4 : 0);
    return *optional_elem ? 9 : 0;
  }
  return 0;
}

// The tensors of a SequenceProto the model declares as a sequence of tensors; anything else in
// the file (maps, nested sequences, fields of another message) is a mismatch with the model.
std::vector<Tensor> import_tensor_sequence(onnx::SequenceProto& sp, const ImportContext& ctx, const Value& declared) {
  const bool other = sp.sparse_tensor_values_size() || sp.sequence_values_size() || sp.map_values_size() ||
                     sp.optional_values_size() ||
                     (sp.elem_type() != onnx::SequenceProto::TENSOR && sp.elem_type() != onnx::SequenceProto::UNDEFINED);
  if (other || !sp.unknown_fields().empty())
    throw ModelError("is not a SequenceProto of tensors, but the model declares a sequence of tensors for '" +
                     declared.name + "'");
  std::vector<Tensor> out;
  for (auto& t : *sp.mutable_tensor_values()) out.push_back(import_tensor(t, ctx));
  return out;
}

bool file_is_empty(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0;
}

TestValue read_optional_file(const std::string& path, const Value& declared, int opt_elem, const ImportContext& ctx) {
  TestValue v;
  v.kind = TestValue::Kind::None;
  if (file_is_empty(path)) return v;  // an OptionalProto with no field set serializes to 0 bytes
  onnx::OptionalProto op;
  if (!parse_fd(open_for_parse(path, "optional"), op))
    throw ModelError("not a valid OptionalProto (truncated or corrupt file, or another kind of value), but the model "
                     "declares an optional for '" + declared.name + "'");
  const std::string want = opt_elem == 1 ? "an optional tensor" : "an optional sequence";
  if (!op.unknown_fields().empty() || op.has_map_value() || op.has_optional_value() || op.has_sparse_tensor_value() ||
      (op.has_tensor_value() && opt_elem != 1) || (op.has_sequence_value() && opt_elem != 4))
    throw ModelError("does not hold " + want + ", which the model declares for '" + declared.name + "'");
  if (op.has_tensor_value()) {
    v.kind = TestValue::Kind::Tensor;
    v.tensor = import_tensor(*op.mutable_tensor_value(), ctx);
  } else if (op.has_sequence_value()) {
    v.kind = TestValue::Kind::Sequence;
    v.seq = import_tensor_sequence(*op.mutable_sequence_value(), ctx, declared);
  }
  return v;
}

}  // namespace

bool declares_tensor(const Value& v) {
  int opt_elem = 0;
  return declared_kind(v, &opt_elem) == 1;
}

TestValue load_value_pb(const std::string& path, const Value& declared) {
  return with_file_context("test data file '" + path + "'", [&] {
    int opt_elem = 0;
    const int kind = declared_kind(declared, &opt_elem);
    TestValue v;
    if (kind == 1) {
      v.tensor = read_tensor_file(path, &declared);
      return v;
    }
    if (kind == 0)
      throw UnsupportedError("value '" + declared.name +
                             "' has a map or sparse type; only tensors, sequences and optionals are supported");
    ImportContext ctx;
    ctx.base_dir = folder_of(path);
    if (kind == 9) return read_optional_file(path, declared, opt_elem, ctx);
    v.kind = TestValue::Kind::Sequence;
    if (file_is_empty(path)) return v;  // an empty SequenceProto with no field set
    onnx::SequenceProto sp;
    if (!parse_fd(open_for_parse(path, "sequence"), sp))
      throw ModelError("not a valid SequenceProto (truncated or corrupt file, or another kind of value), but the model "
                       "declares a sequence for '" + declared.name + "'");
    v.seq = import_tensor_sequence(sp, ctx, declared);
    return v;
  });
}

}  // namespace mcc::ir
