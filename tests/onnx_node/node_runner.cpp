// ONNX backend test case runner with crash and hang isolation (fork + pipe + timeout).
#include "onnx_node/node_runner.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>
#include <thread>

#include "backends/backend_registry.h"
#include "backends/compare.h"
#include "backends/executor.h"
#include "backends/thread_pool.h"
#include "ir/onnx_io.h"
#include "ir/sample_data.h"

namespace fs = std::filesystem;

namespace mcc::test {
namespace {

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  if (s.size() > 300) s = s.substr(0, 300) + "...";
  return s;
}

backends::RValue to_rvalue(ir::TestValue v) {
  switch (v.kind) {
    case ir::TestValue::Kind::Sequence: return backends::RValue::sequence(std::move(v.seq));
    case ir::TestValue::Kind::None: return backends::RValue::none();
    default: return backends::RValue::of(std::move(v.tensor));
  }
}

// Reads test_data_set_N/input_K.pb and output_K.pb as the types the graph declares (tensors,
// sequences, optionals), as onnx's runner does. input_K is the K-th input that is not an initializer.
void load_test_data_set(const ir::Graph& g, const std::string& dir,
                        std::vector<std::pair<std::string, backends::RValue>>& feeds,
                        std::vector<std::optional<backends::RValue>>& expected) {
  std::vector<const ir::Value*> data_inputs;
  for (const ir::Value* v : g.inputs)
    if (!v->initializer) data_inputs.push_back(v);
  for (size_t k = 0;; ++k) {
    const auto p = fs::path(dir) / ("input_" + std::to_string(k) + ".pb");
    if (!fs::exists(p)) break;
    if (k >= data_inputs.size()) throw ModelError(p.string() + ": the model has only " + std::to_string(data_inputs.size()) + " data inputs");
    backends::RValue v = to_rvalue(ir::load_value_pb(p.string(), *data_inputs[k]));
    // onnx's test generator stores bfloat16 data as uint16 arrays: read those bits as bf16.
    if (data_inputs[k]->dtype == ir::DType::BF16 && v.tensor.dtype() == ir::DType::U16)
      v.tensor = ir::Tensor::from_buffer(ir::DType::BF16, v.tensor.dims(), v.tensor.buffer());
    feeds.emplace_back(data_inputs[k]->name, std::move(v));
  }
  for (size_t k = 0; k < g.outputs.size(); ++k) {
    const auto p = fs::path(dir) / ("output_" + std::to_string(k) + ".pb");
    if (fs::exists(p)) expected[k] = to_rvalue(ir::load_value_pb(p.string(), *g.outputs[k]));
  }
}

NodeCaseResult run_in_process(const std::string& case_dir, const NodeCaseOptions& opts) {
  NodeCaseResult r;
  try {
    ir::Model model = ir::load_model((fs::path(case_dir) / "model.onnx").string());
    backends::ExecOptions eo{1};
    if (opts.backend != "cpu") eo.backend = &backends::find_backend(opts.backend);
    backends::Executor exec(model, eo);
    int sets = 0;
    std::vector<std::string> dirs;
    for (const auto& e : fs::directory_iterator(case_dir))
      if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) dirs.push_back(e.path().string());
    std::sort(dirs.begin(), dirs.end());
    for (const auto& d : dirs) {
      std::vector<std::pair<std::string, backends::RValue>> feeds;
      std::vector<std::optional<backends::RValue>> expected(model.graph->outputs.size());
      load_test_data_set(*model.graph, d, feeds, expected);
      auto outs = exec.run(feeds);
      for (size_t k = 0; k < outs.size(); ++k) {
        if (!expected[k]) continue;
        if (expected[k]->tensor.dtype() == ir::DType::U16 && outs[k].kind == backends::RValue::Kind::Tensor &&
            outs[k].tensor.dtype() == ir::DType::BF16)
          outs[k].tensor = ir::Tensor::from_buffer(ir::DType::U16, outs[k].tensor.dims(), outs[k].tensor.buffer());
        auto m = backends::compare_values(outs[k], *expected[k], backends::Tolerance{opts.atol, opts.rtol});
        if (!m.allclose()) {
          r.reason = "output " + std::to_string(k) + " ('" + model.graph->outputs[k]->name + "') " +
                     (m.comparable ? std::to_string(m.not_close + m.nan_inf_mismatch) + " of " +
                                         std::to_string(m.numel) + " elements differ, max abs err " +
                                         std::to_string(m.max_abs)
                                   : m.mismatch);
          return r;
        }
      }
      ++sets;
    }
    if (sets == 0) { r.reason = "no test_data_set_N folder"; return r; }
    r.passed = true;
    if (opts.backend != "cpu") r.nodes_on_backend = exec.stats().nodes_on_requested;
  } catch (const std::exception& e) {
    r.reason = one_line(e.what());
  }
  return r;
}

}  // namespace

NodeCaseResult run_node_case(const std::string& case_dir, const NodeCaseOptions& opts) {
  int fds[2];
  if (::pipe(fds) != 0) return run_in_process(case_dir, opts);
  const pid_t pid = ::fork();
  if (pid < 0) { ::close(fds[0]); ::close(fds[1]); return run_in_process(case_dir, opts); }
  if (pid == 0) {
    ::close(fds[0]);
    backends::ThreadPool::reset_after_fork(1);
    NodeCaseResult r = run_in_process(case_dir, opts);
    std::string msg = (r.passed ? "P" : "F") + std::to_string(r.nodes_on_backend) + "|" + r.reason;
    ssize_t off = 0;
    while (off < static_cast<ssize_t>(msg.size())) {
      ssize_t w = ::write(fds[1], msg.data() + off, msg.size() - static_cast<size_t>(off));
      if (w <= 0) break;
      off += w;
    }
    ::close(fds[1]);
    ::_exit(0);
  }
  ::close(fds[1]);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(opts.timeout_seconds);
  int status = 0;
  bool done = false;
  std::string msg;
  char buf[4096];
  while (!done) {
    const pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) { done = true; break; }
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      ::close(fds[0]);
      return {false, "timed out after " + std::to_string(opts.timeout_seconds) + " s"};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0) msg.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  if (WIFSIGNALED(status)) return {false, std::string("crashed with signal ") + strsignal(WTERMSIG(status))};
  if (msg.empty()) return {false, "child exited without a result (status " + std::to_string(status) + ")"};
  const size_t bar = msg.find('|');
  if (bar == std::string::npos) return {false, "child sent a malformed result"};
  return {msg[0] == 'P', msg.substr(bar + 1), std::stoll(msg.substr(1, bar - 1))};
}

}  // namespace mcc::test
