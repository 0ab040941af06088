// mcc bench: not available in this build yet; the subcommand is registered so `mcc -h` lists it
// and a call exits with code 4 (unsupported) and one clear line.
#include "cli/commands.h"
#include "ir/errors.h"

namespace mcc::cli {
void add_bench_command(CLI::App& app, CommandSlot& slot) {
  auto* sub = app.add_subcommand("bench", "Measure latency and throughput on a backend (not available yet)");
  sub->allow_extras();
  sub->callback([&slot] { slot.set([]() -> int { throw UnsupportedError("bench is not implemented yet"); }); });
}
}  // namespace mcc::cli
