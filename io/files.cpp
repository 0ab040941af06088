// File helpers: whole-file reads, atomic writes, output-path checks and input-model loading.
#include "io/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "io/sha256.h"
#include "ir/onnx_io.h"

namespace fs = std::filesystem;

namespace mcc::io {

std::string read_file(const std::string& path) {
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (ec || !fs::exists(st)) throw ModelError(path + ": no such file; check the path");
  if (fs::is_directory(st)) throw ModelError(path + ": is a folder, not a model file; pass the .onnx file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ModelError(path + ": cannot be opened (" + std::strerror(errno) + "); check its permissions");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw ModelError(path + ": read error; check the disk and retry");
  return bytes;
}

void write_file_atomically(const std::string& path, std::string_view data) {
  const fs::path target(path);
  std::string tmpl = (target.parent_path() / ("." + target.filename().string() + ".tmp-XXXXXX")).string();
  if (target.parent_path().empty()) tmpl = "." + target.filename().string() + ".tmp-XXXXXX";
  const int fd = ::mkstemp(tmpl.data());
  if (fd < 0)
    throw UsageError(path + ": cannot create a file in its folder (" + std::strerror(errno) +
                     "); choose a writable output location");
  auto fail = [&](const char* what) {
    const std::string err = std::strerror(errno);
    ::close(fd);
    ::unlink(tmpl.c_str());
    throw UsageError(path + ": " + what + " (" + err + "); choose a writable output location with free space");
  };
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write failed");
    }
    off += static_cast<size_t>(n);
  }
  // mkstemp creates 0600; give the file the usual permissions under the user's umask.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);
  if (::fsync(fd) != 0) fail("flush to disk failed");
  if (::close(fd) != 0) {
    ::unlink(tmpl.c_str());
    throw UsageError(path + ": close failed (" + std::string(std::strerror(errno)) + "); retry");
  }
  if (::rename(tmpl.c_str(), path.c_str()) != 0) {
    const std::string err = std::strerror(errno);
    ::unlink(tmpl.c_str());
    throw UsageError(path + ": cannot be replaced (" + err + "); choose a writable output location");
  }
}

void check_output_path(const std::string& path, std::string_view flag) {
  if (path.empty()) throw UsageError(std::string(flag) + " needs a file name");
  const fs::path p(path);
  std::error_code ec;
  if (fs::is_directory(p, ec))
    throw UsageError(path + ": is a folder; " + std::string(flag) + " needs a file name such as " +
                     (p / "model.onnx").string());
  const fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  if (!fs::exists(dir, ec))
    throw UsageError(path + ": folder '" + dir.string() + "' does not exist; create it or choose another " +
                     std::string(flag));
  if (!fs::is_directory(dir, ec))
    throw UsageError(path + ": '" + dir.string() + "' is not a folder; choose another " + std::string(flag));
  if (::access(dir.c_str(), W_OK) != 0)
    throw UsageError(path + ": folder '" + dir.string() + "' is not writable; choose another " +
                     std::string(flag));
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) return fs::equivalent(a, b, ec);
  return fs::weakly_canonical(a, ec) == fs::weakly_canonical(b, ec);
}

namespace {
void detach_tensor(ir::Tensor& t) {
  if (t.external && t.buffer()) t = t.clone();  // clone() keeps `external` for a faithful save
}

/// Calls fn on every tensor the model holds: initializers and tensor attributes, subgraphs too.
template <class Fn>
void for_each_model_tensor(ir::Model& m, Fn&& fn) {
  if (!m.graph) return;
  ir::for_each_graph(*m.graph, [&](ir::Graph& g) {
    for (ir::Value* v : g.initializers)
      if (v && v->initializer) fn(*v->initializer);
    for (ir::Node* n : g.nodes())
      for (auto& a : n->attrs) {
        if (auto* t = std::get_if<ir::Tensor>(&a.value)) fn(*t);
        if (auto* ts = std::get_if<std::vector<ir::Tensor>>(&a.value))
          for (auto& t : *ts) fn(t);
      }
  });
}
}  // namespace

void detach_external_data(ir::Model& m) { for_each_model_tensor(m, detach_tensor); }

uint64_t model_size_on_disk(ir::Model& m, const std::string& path) {
  std::error_code ec;
  uint64_t total = fs::file_size(path, ec);
  if (ec) total = 0;
  std::set<std::string> locations;
  for_each_model_tensor(m, [&](const ir::Tensor& t) {
    if (t.external) locations.insert(t.external->location);
  });
  const fs::path folder = fs::path(path).parent_path();
  for (const auto& loc : locations) {
    const uint64_t n = fs::file_size(folder / loc, ec);
    if (!ec) total += n;
  }
  return total;
}

InputModel load_input_model(const std::string& path, bool detach_external, bool with_sha256) {
  // The file is hashed and then parsed as a stream (never held twice in memory: peak ~1x the
  // model); tensor data is moved into the IR, and external data is detached on request, so no
  // later write can touch what was read.
  std::error_code ec;
  if (!fs::exists(path, ec)) throw ModelError(path + ": no such file; check the path");
  if (fs::is_directory(path, ec)) throw ModelError(path + ": is a folder, not an .onnx file");
  InputModel in;
  in.size = fs::file_size(path, ec);
  if (ec) throw ModelError(path + ": cannot be read (" + ec.message() + ")");
  if (in.size == 0) throw ModelError(path + ": the file is empty; pass a complete .onnx model");
  if (with_sha256) in.sha256 = sha256_file_hex(path);
  try {
    in.model = ir::load_model(path);
    if (!in.model.graph) throw ModelError("the model holds no graph");
    if (detach_external) detach_external_data(in.model);
  } catch (Error& e) {
    std::string msg = e.what();
    if (msg.rfind(path, 0) == 0) throw;  // already names the file
    // The importer names the file as "model '<path>': ..."; say it once, in the CLI's form.
    const std::string importer_prefix = "model '" + path + "': ";
    if (msg.rfind(importer_prefix, 0) == 0) msg = msg.substr(importer_prefix.size());
    if (dynamic_cast<ModelError*>(&e) && msg.find(';') == std::string::npos)
      throw ModelError(path + ": " + msg + "; check that the file is a complete, valid ONNX model");
    if (dynamic_cast<ModelError*>(&e)) throw ModelError(path + ": " + msg);
    if (dynamic_cast<UnsupportedError*>(&e)) throw UnsupportedError(path + ": " + msg);
    e.add_context(path);
    throw;
  }
  return in;
}

}  // namespace mcc::io
