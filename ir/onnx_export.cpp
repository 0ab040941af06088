// IR → ONNX export: deterministic bytes, atomic save (temp file + fsync + rename), initializer
// bytes streamed straight from IR buffers to the file (peak memory stays ≈ the model size and
// models over 2 GB work through external data).
//
// Normalisations (the only ways a saved file differs from the loaded one; everything else,
// including unknown fields of newer ONNX releases and field presence, is carried through):
//  1. Tensor data is always written as raw_data (little-endian); typed fields (float_data,
//     int32_data, int64_data, double_data, uint64_data) are converted on import. String tensors
//     keep string_data. Tensors of dtype codes mcc does not know keep their fields as they were.
//  2. Nodes are written in topological order (import sorts graphs that are not sorted).
//  3. External data is rewritten: every tensor that was external in the input (plus, when the
//     inline model would exceed protobuf's 2 GB limit or SaveOptions::force_external is set, every
//     main-graph initializer of at least 1 KiB) goes to one data file next to the output
//     (default "<output file name>.data"), in graph order, each tensor at an offset aligned to
//     4096 bytes (64 bytes for tensors under 4 KiB), with keys location, offset, length, then the
//     original checksum and other keys. serialize_model() and tensor files inline everything.
//  4. Fields are written in field-number order with unknown fields last (protobuf's canonical
//     order); metadata_props of nodes, values and graphs (newer ONNX fields) come after the other
//     unknown fields of their message.
//  5. A model whose opset list was changed in the IR gets its opset_import rewritten from the IR.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <google/protobuf/io/coded_stream.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>

#include "ir/onnx_io.h"
#include "ir/onnx_proto_util.h"

namespace mcc::ir {
namespace {

namespace pb = google::protobuf;
namespace fs = std::filesystem;

constexpr uint64_t kExternalMinBytes = 1024;             // ONNX's own size_threshold default
constexpr uint64_t kInlineLimit = INT_MAX - (16u << 20);  // headroom under protobuf's 2 GB

// ---------------------------------------------------------------- output sinks

class Sink {
 public:
  virtual ~Sink() = default;
  virtual void write(const void* p, size_t n) = 0;
  void varint(uint64_t v) {
    uint8_t b[10];
    const uint8_t* e = pb::io::CodedOutputStream::WriteVarint64ToArray(v, b);
    write(b, static_cast<size_t>(e - b));
  }
  void tag(int field) { varint(static_cast<uint64_t>(field) << 3 | 2); }  // length-delimited
  void str(const std::string& s) { write(s.data(), s.size()); }
};

size_t delimited_size(uint64_t len) { return pb::io::CodedOutputStream::VarintSize64(len) + len; }

class StringSink final : public Sink {
 public:
  explicit StringSink(std::string& out) : out_(out) {}
  void write(const void* p, size_t n) override { out_.append(static_cast<const char*>(p), n); }

 private:
  std::string& out_;
};

/// Buffered writer to a file descriptor; large blocks go straight to write(2).
class FdSink final : public Sink {
 public:
  FdSink(int fd, std::string name) : fd_(fd), name_(std::move(name)) { buf_.reserve(kBuf); }
  void write(const void* p, size_t n) override {
    if (buf_.size() + n > kBuf) flush();
    if (n >= kBuf) return raw(static_cast<const char*>(p), n);
    buf_.append(static_cast<const char*>(p), n);
  }
  void zeros(size_t n) {
    static const char kZero[4096] = {};
    while (n) { const size_t k = std::min(n, sizeof kZero); write(kZero, k); n -= k; }
  }
  void flush() {
    raw(buf_.data(), buf_.size());
    buf_.clear();
  }

 private:
  static constexpr size_t kBuf = 4u << 20;
  void raw(const char* p, size_t n) {
    while (n) {
      const ssize_t w = ::write(fd_, p, std::min<size_t>(n, 1u << 30));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) throw ModelError("cannot write '" + name_ + "': " + std::strerror(errno));
      p += w;
      n -= static_cast<size_t>(w);
    }
  }
  int fd_;
  std::string name_;
  std::string buf_;
};

/// A temporary file beside `final_path`, renamed over it by commit(); removed on failure.
class TempFile {
 public:
  explicit TempFile(const fs::path& final_path) : final_(final_path) {
    const fs::path dir = final_path.has_parent_path() ? final_path.parent_path() : fs::path(".");
    std::string tmpl = (dir / ("." + final_path.filename().string() + ".tmp-XXXXXX")).string();
    fd_ = ::mkstemp(tmpl.data());
    if (fd_ < 0)
      throw ModelError("cannot create a temporary file in '" + dir.string() + "': " + std::strerror(errno));
    tmp_ = tmpl;
    ::fchmod(fd_, 0644);
  }
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(tmp_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  int fd() const { return fd_; }
  const std::string& final_name() const { return final_; }
  /// Flushes to disk and closes; the file is still under its temporary name.
  void finish() {
    if (::fsync(fd_) != 0) throw ModelError("cannot sync '" + tmp_ + "': " + std::strerror(errno));
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) throw ModelError("cannot close '" + tmp_ + "': " + std::strerror(errno));
  }
  void commit() {
    if (::rename(tmp_.c_str(), final_.c_str()) != 0)
      throw ModelError("cannot rename '" + tmp_ + "' to '" + final_ + "': " + std::strerror(errno));
    committed_ = true;
  }

 private:
  std::string final_, tmp_;
  int fd_ = -1;
  bool committed_ = false;
};

void sync_dir(const fs::path& file) {
  const fs::path dir = file.has_parent_path() ? file.parent_path() : fs::path(".");
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) { ::fsync(fd); ::close(fd); }
}

// ---------------------------------------------------------------- proto building

/// External data placement, in graph order (deterministic).
struct DataPlan {
  struct Item { const Tensor* tensor; uint64_t offset; };
  std::vector<Item> items;
  uint64_t size = 0;
  uint64_t add(const Tensor& t) {
    const uint64_t n = t.bytes().size();
    const uint64_t align = n >= 4096 ? 4096 : 64;
    const uint64_t off = (size + align - 1) / align * align;
    items.push_back({&t, off});
    size = off + n;
    return off;
  }
};

struct ExportContext {
  bool inline_all = false;         // serialize_model / tensor files: no external data at all
  bool externalize_large = false;  // main-graph initializers >= 1 KiB go external
  std::string location;            // data file name written into external_data entries
  DataPlan plan;
};

template <class M>
void merge_passthrough(const std::string& bytes, M& msg, const char* what) {
  if (!bytes.empty() && !msg.ParseFromString(bytes))
    throw InternalError(std::string("corrupt passthrough bytes of a ") + what);
}

/// Fills `tp` from `t`. External tensors get their offset in the plan and no data; the others
/// get raw_data when `with_raw` (callers that stream the bytes themselves pass false).
void export_tensor(const Tensor& t, onnx::TensorProto& tp, ExportContext& ctx, bool external,
                   bool with_raw, const std::string* name = nullptr) {
  merge_passthrough(t.proto_passthrough, tp, "tensor");
  for (int64_t d : t.dims()) tp.add_dims(d);
  if (t.dtype() != DType::Undefined) tp.set_data_type(static_cast<int32_t>(t.dtype()));
  const std::string& nm = name ? *name : t.name;
  if (!nm.empty()) tp.set_name(nm);
  if (!t.doc_string.empty()) tp.set_doc_string(t.doc_string);
  if (t.dtype() == DType::String) {
    for (const auto& s : t.strings()) tp.add_string_data(s);
  } else if (external) {
    const uint64_t off = ctx.plan.add(t);
    auto kv = [&](const std::string& k, const std::string& v) {
      auto* e = tp.add_external_data();
      e->set_key(k);
      e->set_value(v);
    };
    kv("location", ctx.location);
    kv("offset", std::to_string(off));
    kv("length", std::to_string(t.bytes().size()));
    if (t.external && !t.external->checksum.empty()) kv("checksum", t.external->checksum);
    if (t.external)
      for (const auto& [k, v] : t.external->extra) kv(k, v);
    tp.set_data_location(onnx::TensorProto::EXTERNAL);
  } else if (with_raw && !t.bytes().empty()) {
    tp.set_raw_data(t.raw(), t.bytes().size());
  }
}

bool goes_external(const Tensor& t, const ExportContext& ctx, bool main_initializer) {
  if (ctx.inline_all || t.dtype() == DType::String) return false;
  if (t.external) return true;
  return main_initializer && ctx.externalize_large && t.bytes().size() >= kExternalMinBytes;
}

/// Writes v's declared type into vi. The imported TypeProto goes back verbatim unless the IR has
/// since given the value another known tensor type; a tensor type is never written without an
/// element type (ONNX Runtime refuses elem_type 0), so a value whose element type is unknown and
/// that had no type bytes of its own gets none (an empty `type {}` from the file is still in the
/// value info's passthrough).
void export_type(const Value& v, onnx::ValueInfoProto& vi) {
  if (!v.type_passthrough.bytes.empty()) {
    onnx::TypeProto tp;
    merge_passthrough(v.type_passthrough.bytes, tp, "type");
    DType dt = DType::Undefined;
    Shape sh;
    if (!onnx_util::decode_tensor_type(tp, dt, sh) || v.dtype == DType::Undefined ||
        (dt == v.dtype && sh == v.shape)) {
      *vi.mutable_type() = std::move(tp);
      return;
    }
  }
  if (v.dtype == DType::Undefined) return;
  onnx_util::encode_tensor_type(v.dtype, v.shape, *vi.mutable_type());
}

void export_value_info(const Value& v, onnx::ValueInfoProto& vi) {
  merge_passthrough(v.proto_passthrough, vi, "value info");
  if (!v.name.empty()) vi.set_name(v.name);
  if (v.has_type) export_type(v, vi);
  if (!v.doc_string.empty()) vi.set_doc_string(v.doc_string);
  onnx_util::put_unknown_metadata(vi, onnx_util::kValueInfoMetadataField, v.metadata_props);
}

/// A declaration in one role: as read when the value shares it with another role and is
/// unchanged since import (Graph::shared_decls), else from the value's own fields.
void export_declaration(const Graph& g, const Value& v, const char* role, onnx::ValueInfoProto& vi) {
  if (const auto it = g.shared_decls.find(v.name); it != g.shared_decls.end()) {
    const auto r = it->second.by_role.find(role);
    if (r != it->second.by_role.end() && it->second.fingerprint == onnx_util::declaration_fingerprint(v))
      return merge_passthrough(r->second, vi, "declaration");
  }
  export_value_info(v, vi);
}

void export_graph(const Graph& g, onnx::GraphProto& gp, ExportContext& ctx, bool with_initializers);

void export_attribute(const Attribute& a, onnx::AttributeProto& ap, ExportContext& ctx) {
  merge_passthrough(a.proto_passthrough, ap, "attribute");
  if (!a.name.empty()) ap.set_name(a.name);
  if (!a.ref_attr_name.empty()) ap.set_ref_attr_name(a.ref_attr_name);
  if (!a.doc_string.empty()) ap.set_doc_string(a.doc_string);
  const auto kind = static_cast<int>(a.kind);
  if (kind != 0 && onnx::AttributeProto_AttributeType_IsValid(kind))
    ap.set_type(static_cast<onnx::AttributeProto_AttributeType>(kind));
  const AttrValue& v = a.value;
  if (const auto* f = std::get_if<float>(&v)) {
    uint32_t bits;
    std::memcpy(&bits, f, sizeof bits);
    if (bits != 0) ap.set_f(*f);
  } else if (const auto* i = std::get_if<int64_t>(&v)) {
    if (*i != 0) ap.set_i(*i);
  } else if (const auto* s = std::get_if<std::string>(&v)) {
    if (!s->empty()) ap.set_s(*s);
  } else if (const auto* t = std::get_if<Tensor>(&v)) {
    if (t->defined()) export_tensor(*t, *ap.mutable_t(), ctx, goes_external(*t, ctx, false), true);
  } else if (const auto* sg = std::get_if<std::shared_ptr<Graph>>(&v)) {
    if (*sg) export_graph(**sg, *ap.mutable_g(), ctx, true);
  } else if (const auto* fs_ = std::get_if<std::vector<float>>(&v)) {
    for (float x : *fs_) ap.add_floats(x);
  } else if (const auto* is = std::get_if<std::vector<int64_t>>(&v)) {
    for (int64_t x : *is) ap.add_ints(x);
  } else if (const auto* ss = std::get_if<std::vector<std::string>>(&v)) {
    for (const auto& x : *ss) ap.add_strings(x);
  } else if (const auto* ts = std::get_if<std::vector<Tensor>>(&v)) {
    for (const auto& x : *ts) export_tensor(x, *ap.add_tensors(), ctx, goes_external(x, ctx, false), true);
  } else if (const auto* gs = std::get_if<std::vector<std::shared_ptr<Graph>>>(&v)) {
    for (const auto& x : *gs)
      if (x) export_graph(*x, *ap.add_graphs(), ctx, true);
  } else if (const auto* o = std::get_if<OpaqueProto>(&v)) {
    if (a.kind == AttrKind::TypeProto) merge_passthrough(o->bytes, *ap.mutable_tp(), "type proto");
    else merge_passthrough(o->bytes, *ap.mutable_sparse_tensor(), "sparse tensor");
  } else if (const auto* os = std::get_if<std::vector<OpaqueProto>>(&v)) {
    for (const auto& x : *os) {
      if (a.kind == AttrKind::TypeProtos) merge_passthrough(x.bytes, *ap.add_type_protos(), "type proto");
      else merge_passthrough(x.bytes, *ap.add_sparse_tensors(), "sparse tensor");
    }
  }
}

void export_node(const Node& n, onnx::NodeProto& np, ExportContext& ctx) {
  merge_passthrough(n.proto_passthrough, np, "node");
  for (const Value* v : n.inputs) np.add_input(v ? v->name : std::string());
  for (const Value* v : n.outputs) np.add_output(v ? v->name : std::string());
  if (!n.name.empty()) np.set_name(n.name);
  if (!n.op_type.empty()) np.set_op_type(n.op_type);
  if (!n.domain.empty()) np.set_domain(n.domain);
  for (const auto& a : n.attrs) export_attribute(a, *np.add_attribute(), ctx);
  if (!n.doc_string.empty()) np.set_doc_string(n.doc_string);
  onnx_util::put_unknown_metadata(np, onnx_util::kNodeMetadataField, n.metadata_props);
}

void export_graph(const Graph& g, onnx::GraphProto& gp, ExportContext& ctx, bool with_initializers) {
  merge_passthrough(g.proto_passthrough, gp, "graph");
  if (!g.name.empty()) gp.set_name(g.name);
  if (!g.doc_string.empty()) gp.set_doc_string(g.doc_string);
  for (const Node* n : g.nodes()) export_node(*n, *gp.add_node(), ctx);
  if (with_initializers)
    for (const Value* v : g.initializers)
      if (v->initializer)
        export_tensor(*v->initializer, *gp.add_initializer(), ctx, goes_external(*v->initializer, ctx, false),
                      true, &v->name);
  for (const auto& s : g.sparse_initializers) merge_passthrough(s.bytes, *gp.add_sparse_initializer(), "sparse initializer");
  for (const Value* v : g.inputs) export_declaration(g, *v, "input", *gp.add_input());
  for (const Value* v : g.outputs) export_declaration(g, *v, "output", *gp.add_output());
  for (const Value* v : g.value_info) export_declaration(g, *v, "value_info", *gp.add_value_info());
  for (const auto& q : g.quantization_annotation) merge_passthrough(q.bytes, *gp.add_quantization_annotation(), "annotation");
  onnx_util::put_unknown_metadata(gp, onnx_util::kGraphMetadataField, g.metadata_props);
}

void export_model_fields(const Model& m, onnx::ModelProto& mp) {
  merge_passthrough(m.proto_passthrough, mp, "model");
  if (m.ir_version != 0) mp.set_ir_version(m.ir_version);
  if (!m.producer_name.empty()) mp.set_producer_name(m.producer_name);
  if (!m.producer_version.empty()) mp.set_producer_version(m.producer_version);
  if (!m.domain.empty()) mp.set_domain(m.domain);
  if (m.model_version != 0) mp.set_model_version(m.model_version);
  if (!m.doc_string.empty()) mp.set_doc_string(m.doc_string);
  // The loaded opset_import entries are in the passthrough bytes; keep them unless the IR differs.
  bool same = mp.opset_import_size() == static_cast<int>(m.opset_imports.size());
  for (int i = 0; same && i < mp.opset_import_size(); ++i)
    same = mp.opset_import(i).domain() == m.opset_imports[static_cast<size_t>(i)].domain &&
           mp.opset_import(i).version() == m.opset_imports[static_cast<size_t>(i)].version;
  if (!same) {
    mp.clear_opset_import();
    for (const auto& o : m.opset_imports) {
      auto* p = mp.add_opset_import();
      p->set_domain(o.domain);
      p->set_version(o.version);
    }
  }
  for (const auto& [k, v] : m.metadata_props) {
    auto* e = mp.add_metadata_props();
    e->set_key(k);
    e->set_value(v);
  }
  for (const auto& t : m.training_info) merge_passthrough(t.bytes, *mp.add_training_info(), "training info");
  for (const auto& f : m.functions) merge_passthrough(f.bytes, *mp.add_functions(), "function");
}

// ---------------------------------------------------------------- streamed model layout

/// One main-graph initializer: its TensorProto fields before and after raw_data, and the bytes.
struct InitPiece {
  std::string head, tail;
  const std::byte* raw = nullptr;
  size_t raw_size = 0;
  size_t size() const {
    return head.size() + (raw_size ? 1 + delimited_size(raw_size) : 0) + tail.size();
  }
};

/// The whole model as pieces in canonical field order: model fields 1..6, graph (nodes, name,
/// initializers, the rest), model fields 8.. . Byte-identical to protobuf's own serialization.
struct ModelPieces {
  std::string model_head, model_tail, graph_head, graph_tail;
  std::vector<InitPiece> inits;
  uint64_t graph_size() const {
    uint64_t n = graph_head.size() + graph_tail.size();
    for (const auto& p : inits) n += 1 + delimited_size(p.size());
    return n;
  }
  uint64_t total() const { return model_head.size() + 1 + delimited_size(graph_size()) + model_tail.size(); }
  void write(Sink& s) const {
    s.str(model_head);
    s.tag(7);  // ModelProto.graph
    s.varint(graph_size());
    s.str(graph_head);
    for (const auto& p : inits) {
      s.tag(5);  // GraphProto.initializer
      s.varint(p.size());
      s.str(p.head);
      if (p.raw_size) {
        s.tag(9);  // TensorProto.raw_data
        s.varint(p.raw_size);
        s.write(p.raw, p.raw_size);
      }
      s.str(p.tail);
    }
    s.str(graph_tail);
    s.str(model_tail);
  }
};

ModelPieces build_pieces(const Model& m, ExportContext& ctx, bool force_external) {
  if (!m.graph) throw InternalError("save_model: the model has no graph");
  ModelPieces out;
  onnx::ModelProto mp;
  export_model_fields(m, mp);
  onnx::GraphProto gp;
  export_graph(*m.graph, gp, ctx, /*with_initializers=*/false);

  uint64_t inline_estimate = mp.ByteSizeLong() + gp.ByteSizeLong();
  for (const Value* v : m.graph->initializers)
    if (v->initializer && !goes_external(*v->initializer, ctx, true))
      inline_estimate += v->initializer->bytes().size() + 64 + v->name.size() + 10 * v->initializer->rank();
  ctx.externalize_large = !ctx.inline_all && (force_external || inline_estimate > kInlineLimit);

  for (const Value* v : m.graph->initializers) {
    if (!v->initializer) continue;
    const Tensor& t = *v->initializer;
    onnx::TensorProto tp;
    const bool ext = goes_external(t, ctx, true);
    export_tensor(t, tp, ctx, ext, /*with_raw=*/false, &v->name);
    auto tail = onnx_util::split_fields_after(tp, 9);
    InitPiece p;
    p.head = onnx_util::serialize(tp);
    p.tail = onnx_util::serialize(*tail);
    if (!ext && t.dtype() != DType::String && !t.bytes().empty()) {
      p.raw = t.raw();
      p.raw_size = t.bytes().size();
    }
    out.inits.push_back(std::move(p));
  }
  auto gtail = onnx_util::split_fields_after(gp, 5);
  out.graph_head = onnx_util::serialize(gp);
  out.graph_tail = onnx_util::serialize(*gtail);
  auto mtail = onnx_util::split_fields_after(mp, 7);
  out.model_head = onnx_util::serialize(mp);
  out.model_tail = onnx_util::serialize(*mtail);
  if (out.total() > INT_MAX)
    throw UnsupportedError("the model is " + std::to_string(out.total()) +
                           " bytes inline, over protobuf's 2 GB limit, and cannot be written with "
                           "external data here (large tensors outside the main graph's initializers)");
  return out;
}

std::string check_data_location(const std::string& loc) {
  const fs::path p(loc);
  if (loc.empty() || p.is_absolute()) throw UsageError("external data file '" + loc + "' must be a relative path");
  for (const auto& part : p)
    if (part == "..") throw UsageError("external data file '" + loc + "' must stay in the output folder");
  return loc;
}

}  // namespace

void save_model(const Model& m, const std::string& path, const SaveOptions& opts) {
  try {
    const fs::path out(path);
    if (out.filename().empty()) throw UsageError("output path '" + path + "' names no file");
    ExportContext ctx;
    ctx.location = check_data_location(opts.external_file.empty() ? out.filename().string() + ".data"
                                                                  : opts.external_file);
    const ModelPieces pieces = build_pieces(m, ctx, opts.force_external);

    // Both files go to temporary names first; the input (even at the same path, or an mmapped
    // data file about to be replaced) is never written in place.
    std::optional<TempFile> data_tmp;
    if (!ctx.plan.items.empty()) {
      const fs::path data_path = (out.has_parent_path() ? out.parent_path() : fs::path(".")) / ctx.location;
      data_tmp.emplace(data_path);
      FdSink s(data_tmp->fd(), data_path.string());
      uint64_t pos = 0;
      for (const auto& it : ctx.plan.items) {
        s.zeros(it.offset - pos);
        s.write(it.tensor->raw(), it.tensor->bytes().size());
        pos = it.offset + it.tensor->bytes().size();
      }
      s.flush();
      data_tmp->finish();
    }
    TempFile model_tmp(out);
    {
      FdSink s(model_tmp.fd(), path);
      pieces.write(s);
      s.flush();
    }
    model_tmp.finish();
    if (data_tmp) data_tmp->commit();
    model_tmp.commit();
    sync_dir(out);
  } catch (Error& e) {
    e.add_context("saving '" + path + "'");
    throw;
  } catch (const std::bad_alloc&) {
    throw BackendError("saving '" + path + "': out of memory");
  }
}

std::string serialize_model(const Model& m) {
  ExportContext ctx;
  ctx.inline_all = true;
  const ModelPieces pieces = build_pieces(m, ctx, false);
  std::string out;
  out.reserve(pieces.total());
  StringSink s(out);
  pieces.write(s);
  return out;
}

void save_tensor_pb(const Tensor& t, const std::string& path) {
  try {
    ExportContext ctx;
    ctx.inline_all = true;
    onnx::TensorProto tp;
    export_tensor(t, tp, ctx, false, true);
    TempFile tmp{fs::path(path)};
    {
      FdSink s(tmp.fd(), path);
      s.str(onnx_util::serialize(tp));
      s.flush();
    }
    tmp.finish();
    tmp.commit();
  } catch (Error& e) {
    e.add_context("saving tensor '" + path + "'");
    throw;
  }
}

}  // namespace mcc::ir
