// Runs the real `mcc` binary from tests: exit code, stdout and stderr captured. A death by signal
// is reported as 128 + signal so crashes fail exit-code checks.
#pragma once
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "support/files.h"
#include "support/paths.h"

extern char** environ;

namespace mcc::test {

struct RunResult {
  int code = -1;
  std::string out, err;
};

/// Runs a program (argv[0] looked up on PATH unless it holds a '/'), stdout and stderr captured
/// in files under `io` named by `tag`.
inline RunResult run_process(std::vector<std::string> full, const std::filesystem::path& io, const std::string& tag) {
  const auto out = io / ("out" + tag + ".txt");
  const auto err = io / ("err" + tag + ".txt");
  std::vector<char*> argv;
  for (auto& a : full) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  RunResult r;
  const int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return r;
  int status = 0;
  waitpid(pid, &status, 0);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

inline RunResult run_mcc(const std::vector<std::string>& args) {
  static TempDir io("mcc-cli-io");
  static int counter = 0;
  std::vector<std::string> full{mcc_binary().string()};
  full.insert(full.end(), args.begin(), args.end());
  return run_process(std::move(full), io.path, std::to_string(counter++));
}

/// Occurrences of `what` in `s` (non-overlapping).
inline size_t count_occurrences(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + what.size())) ++n;
  return n;
}

/// Exactly one line on stderr, in the documented shape.
inline bool one_error_line(const std::string& err) {
  return err.rfind("mcc: error: ", 0) == 0 && std::count(err.begin(), err.end(), '\n') == 1;
}

}  // namespace mcc::test
