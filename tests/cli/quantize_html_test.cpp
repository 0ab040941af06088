// Tests of `mcc quantize --html FILE` (report/quantize_page.h): the MNIST golden model quantized on
// golden/mnist/calib writes one self-contained page whose verdict is the sidecar's check figures,
// whose command is the run's, and whose per-layer part is exactly `mcc eval --per-layer --html`'s
// page on the held-back calibration samples (so the page compares on the samples the check judged).
// A run that misses its budget writes no page; --html with --state or --no-check is a usage error.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "report/html_escape.h"
#include "support/run_mcc.h"

namespace fs = std::filesystem;
using mcc::test::run_mcc;

namespace {

size_t count(const std::string& s, const std::string& what) { return mcc::test::count_occurrences(s, what); }

/// The page from its per-layer section on: what depends only on the models and the samples.
std::string comparison_part(const std::string& h) {
  const size_t at = h.find("<section id=\"per-layer\">");
  return at == std::string::npos ? std::string() : h.substr(at);
}

}  // namespace

TEST_CASE("quantize --html: the check's verdict and samples, the command, the charts, nothing to fetch") {
  const fs::path golden = mcc::test::source_dir() / "golden" / "mnist";
  const std::string fp32 = (golden / "model.onnx").string(), calib = (golden / "calib").string();
  mcc::test::TempDir tmp("mcc-quantize-html");
  const std::string q = (tmp.path / "q.onnx").string(), html = (tmp.path / "q.html").string();
  const std::vector<std::string> args{"quantize", fp32, "-o", q, "--calib", calib, "--html", html};
  // 20 held-back digits cannot show a top-1 agreement of 0.99: the page says UNDECIDED, as the terminal does.
  const auto r = run_mcc(args);
  INFO(r.err);
  REQUIRE(r.code == 0);
  REQUIRE(fs::exists(html));
  CHECK(r.out.find("wrote " + html + "\n") != std::string::npos);
  const std::string h = mcc::test::slurp(html);
  const auto sidecar = nlohmann::json::parse(mcc::test::slurp(tmp.path / "q.mcc.json"));

  // Nothing to fetch: no URLs, no external references, no scripts, and a policy that forbids fetching.
  CHECK(h.rfind("<!DOCTYPE html>", 0) == 0);
  for (const char* s : {"http://", "https://", "src=", "href=", "url(", "@import", "<script", "<link"})
    CHECK_MESSAGE(h.find(s) == std::string::npos, s);
  CHECK(h.find("default-src 'none'") != std::string::npos);

  // The verdict is the sidecar's check figures, each a row of the checks table.
  const auto& checks = sidecar["checks"];
  REQUIRE(checks.size() >= 1);
  bool all_undecided = true;
  for (const auto& c : checks) {
    REQUIRE(c["metric"] != "none");
    all_undecided = all_undecided && c["verdict"] == "undecided";
    const std::string row = "<tr><td>" + c["output"].get<std::string>() + "</td><td>" + c["metric"].get<std::string>() +
                            "</td><td class=\"num\">" + mcc::report::fmt_g(c["value"].get<double>(), 6) + "</td><td>&gt;= " +
                            mcc::report::fmt_g(c["threshold"].get<double>(), 6) + "</td><td class=\"num\">" +
                            std::to_string(c["samples"].get<int>()) + "</td><td>" + c["verdict"].get<std::string>() + "</td>";
    CHECK_MESSAGE(h.find(row) != std::string::npos, row);
  }
  CHECK(all_undecided);
  CHECK(count(h, "<table id=\"checks\">") == 1);
  CHECK(h.find("<table id=\"outputs\">") == std::string::npos);
  const auto stage = std::find_if(sidecar["stages"].begin(), sidecar["stages"].end(),
                                  [](const nlohmann::json& s) { return s["pass"] == "check"; });
  REQUIRE(stage != sidecar["stages"].end());
  const auto& data = (*stage)["record"]["data"];
  const int64_t holdout = data["holdout"].get<int64_t>();
  REQUIRE(holdout > 0);
  CHECK(data["samples"].get<int64_t>() == holdout);
  CHECK(h.find("<span class=\"verdict undecided\">UNDECIDED</span> " + std::to_string(holdout) + " sample(s)") !=
        std::string::npos);
  CHECK(h.find("judged on " + std::to_string(holdout) + " held-back calibration sample(s) of " + calib) != std::string::npos);
  CHECK(h.find("<h1>mcc quantize</h1>") != std::string::npos);

  // The exact command line.
  std::string cmd = mcc::test::mcc_binary().string();
  for (const auto& a : args) cmd += " " + a;  // temp and source paths need no shell quoting
  CHECK(h.find("<pre id=\"command\">" + cmd + "</pre>") != std::string::npos);

  // Chart elements: the SNR chart with the worst 6 marked, histograms, weight ranges.
  CHECK(count(h, "<svg id=\"snr-chart\"") == 1);
  CHECK(count(h, "<circle class=\"layer-point") >= 8);
  CHECK(count(h, "<circle class=\"layer-point worst") == 6);
  CHECK(count(h, "<svg class=\"histogram\"") == 6);
  CHECK(count(h, "<line class=\"qrange qmin\"") >= 1);
  CHECK(count(h, "<svg class=\"weight-ranges\"") >= 2);

  // The comparison is eval's on the held-back samples (the calibration folder's last `holdout`).
  std::vector<fs::path> all;
  for (const auto& e : fs::directory_iterator(calib))
    if (e.is_directory()) all.push_back(e.path());
  std::sort(all.begin(), all.end());  // zero-padded names: sorted order is natural order
  REQUIRE(all.size() > static_cast<size_t>(holdout));
  const fs::path held = tmp.path / "held";
  fs::create_directories(held);
  for (size_t i = all.size() - static_cast<size_t>(holdout); i < all.size(); ++i)
    fs::copy(all[i], held / all[i].filename(), fs::copy_options::recursive);
  const std::string eval_html = (tmp.path / "eval.html").string();
  const auto e = run_mcc({"eval", q, "--reference", fp32, "--inputs", held.string(), "--per-layer", "--html", eval_html});
  INFO(e.err);
  REQUIRE(e.code == 0);
  const std::string part = comparison_part(h);
  CHECK(!part.empty());
  CHECK(part == comparison_part(mcc::test::slurp(eval_html)));
}

TEST_CASE("quantize --html: no page without a passing run; not with --state or --no-check (exit 2)") {
  const fs::path golden = mcc::test::source_dir() / "golden" / "mnist";
  const std::string fp32 = (golden / "model.onnx").string(), calib = (golden / "calib").string();
  mcc::test::TempDir tmp("mcc-quantize-html-usage");
  const std::string q = (tmp.path / "q.onnx").string(), html = (tmp.path / "q.html").string();

  // A missed budget (cosine 1 is only met by an exact model) writes neither model nor page.
  auto r = run_mcc({"quantize", fp32, "-o", q, "--calib", calib, "--min-cosine", "1", "--no-escalate", "--html", html});
  CHECK(r.code == 1);
  CHECK_FALSE(fs::exists(q));
  CHECK_FALSE(fs::exists(html));

  r = run_mcc({"quantize", fp32, "-o", q, "--calib", calib});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const std::string state = (tmp.path / "q.mcc.json").string();
  r = run_mcc({"quantize", fp32, "-o", (tmp.path / "q2.onnx").string(), "--state", state, "--html", html});
  CHECK(r.code == 2);
  CHECK(mcc::test::one_error_line(r.err));
  CHECK(r.err.find("--state") != std::string::npos);
  r = run_mcc({"quantize", fp32, "-o", (tmp.path / "q3.onnx").string(), "--calib", calib, "--no-check", "--html", html});
  CHECK(r.code == 2);
  CHECK(mcc::test::one_error_line(r.err));
  CHECK(r.err.find("--no-check") != std::string::npos);
  CHECK_FALSE(fs::exists(html));
  CHECK_FALSE(fs::exists(tmp.path / "q2.onnx"));
  CHECK_FALSE(fs::exists(tmp.path / "q3.onnx"));
}
