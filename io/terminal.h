// Everything mcc prints to the terminal passes printable() (ir/text_escape.h): bytes that are not
// UTF-8 and control characters from model names or file contents come out as `\xNN`, never raw.
// Applies to std::cout, std::cerr, the log (which writes to std::cerr) and print_out. Does not
// apply to files mcc writes (models keep their bytes; JSON goes through io/json_text.h).
//
// How much a command says on success is one process-wide setting (main() sets it from -q / -v):
// quiet prints nothing but errors (and what --json asks for), normal a short report, verbose
// the same report while the log adds the canonical pipeline and every stage's details.
#pragma once
#include <string_view>

namespace mcc::io {

enum class Verbosity { Quiet, Normal, Verbose };
void set_verbosity(Verbosity v);
Verbosity verbosity();

/// Puts the filter in front of std::cout and std::cerr for the rest of the process.
void install_printable_output();

/// printf-style report text to std::cout (so it is filtered and stays in order with std::cout);
/// nothing when quiet.
void print_out(const char* format, ...) __attribute__((format(printf, 1, 2)));

/// Output a flag asked for (--json): to std::cout whatever the verbosity.
void print_requested(std::string_view text);

}  // namespace mcc::io
