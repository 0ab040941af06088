// Class labels for top-1 accuracy (`mcc eval --labels FILE`): one non-negative integer per sample,
// in the order the samples are listed (ir::list_sample_dirs: natural order of folder names).
// Two file forms, told apart by content, not by extension:
//  - a .npy array of any integer dtype, shape [N] or [N,1];
//  - text with one integer per line; blank lines and `#` comments (whole line or trailing) are
//    ignored; surrounding spaces, a CR before the newline and a UTF-8 byte-order mark are allowed.
// Not for multi-label or soft (probability) targets: those have no single top-1 class.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace mcc::ir {

/// Reads the labels of `path`. Throws ModelError (exit 3) naming the file and what is wrong: the
/// line and its text for a bad text line, the dtype, shape or index for a bad .npy, and a file
/// that holds no label at all.
std::vector<int64_t> read_labels(const std::string& path);

}  // namespace mcc::ir
