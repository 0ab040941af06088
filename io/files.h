// File helpers for commands: whole-file reads, atomic writes (temp + rename), output-path checks,
// and loading an input model completely into memory so that writing can never touch the input.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "ir/graph.h"

namespace mcc::io {

/// Reads a whole file. Throws ModelError naming the path when it is missing, a folder or unreadable.
std::string read_file(const std::string& path);

/// Writes `data` to a temp file beside `path`, flushes it to disk and renames it over `path`.
/// On failure the temp file is removed and UsageError names the path and what to do.
void write_file_atomically(const std::string& path, std::string_view data);

/// Throws UsageError when `path` cannot be an output file: its folder is missing, is not a folder
/// or is not writable, or `path` is itself a folder. `flag` names the option ("-o").
void check_output_path(const std::string& path, std::string_view flag);

/// True when both paths name the same existing file (hard links and symlinks included), or the
/// same normalized path when one does not exist yet.
bool same_file(const std::string& a, const std::string& b);

/// A model loaded from a file that was read fully first, with the identity of those bytes.
struct InputModel {
  ir::Model model;
  uint64_t size = 0;
  std::string sha256;
};

/// Loads `path` (an existing, non-empty ONNX file). When `detach_external` is set, tensors held in
/// external data files are copied into memory, so a later write over those files is safe.
/// Errors are ModelError/UnsupportedError whose message starts with the path.
InputModel load_input_model(const std::string& path, bool detach_external, bool with_sha256);

/// The bytes of the model file `path` and of the external data files its tensors name (each
/// counted once, relative to the file's folder; a missing one counts 0): its size on disk.
uint64_t model_size_on_disk(ir::Model& m, const std::string& path);

/// Copies every external-data tensor (initializers and tensor attributes, subgraphs included)
/// into memory, keeping its external reference so it is saved external again.
void detach_external_data(ir::Model& m);

}  // namespace mcc::io
