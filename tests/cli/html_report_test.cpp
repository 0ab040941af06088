// Tests of `mcc eval --per-layer --html FILE` (report/html_report.h, report/comparison_page.h): the MNIST
// golden model quantized by `mcc quantize` and compared with its fp32 original writes one
// self-contained page: nothing to fetch, one SNR marker per compared layer, histograms with
// quantization-range markers for the worst layers, weight-range charts, byte-identical on a rerun.
// Debian's headless Chromium then renders it: a screenshot (build/test_output/html_report/
// report.png, with the page beside it) and the DOM after parsing must hold the charts, and a
// recording proxy shows the page fetches nothing while a control page's fetch is seen. Without
// chromium the Chromium case fails and says to run scripts/setup.sh.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <filesystem>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "report/html_report.h"
#include "report/quant_ranges.h"
#include "ir/text_escape.h"
#include "support/run_mcc.h"

namespace fs = std::filesystem;
using mcc::test::run_mcc;

namespace {

size_t count(const std::string& s, const std::string& what) { return mcc::test::count_occurrences(s, what); }

/// The MNIST golden model, quantized on its three digits, then evaluated against the original with
/// --per-layer --json --html (the JSON gives the layer ranking the page must show).
struct MnistReport {
  mcc::test::TempDir tmp{"mcc-html-report"};
  std::string fp32, q, samples, html;
  std::vector<std::string> eval_args;
  mcc::test::RunResult eval;
  nlohmann::json j;
  MnistReport() {
    const fs::path golden = mcc::test::source_dir() / "golden" / "mnist";
    fp32 = (golden / "model.onnx").string();
    samples = (tmp.path / "samples").string();
    for (const char* d : {"digit_0", "digit_1", "digit_2"}) {
      fs::create_directories(fs::path(samples) / d);
      fs::copy_file(golden / d / "Input3.npy", fs::path(samples) / d / "Input3.npy");
    }
    q = (tmp.path / "q.onnx").string();
    html = (tmp.path / "report.html").string();
    const auto r = run_mcc({"quantize", fp32, "-o", q, "--calib", samples});
    INFO(r.err);
    REQUIRE(r.code == 0);
    eval_args = {"eval", q, "--reference", fp32, "--inputs", samples, "--per-layer", "--per-layer-top", "0", "--json", "--html", html};
    eval = run_mcc(eval_args);
    INFO(eval.err);
    REQUIRE(eval.code == 0);
    j = nlohmann::json::parse(eval.out);
  }
  std::string page() const { return mcc::test::slurp(html); }
};

/// Where Chromium is, or "" when it is not installed.
std::string find_chromium() {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  for (size_t b = 0; b <= dirs.size();) {
    size_t e = dirs.find(':', b);
    if (e == std::string::npos) e = dirs.size();
    for (const char* name : {"chromium", "chromium-browser"}) {
      const fs::path p = fs::path(dirs.substr(b, e - b)) / name;
      if (!dirs.substr(b, e - b).empty() && ::access(p.c_str(), X_OK) == 0) return p.string();
    }
    b = e + 1;
  }
  return "";
}

/// Runs a program (under coreutils `timeout`), stdout and stderr captured.
mcc::test::RunResult run_program(std::vector<std::string> args, const fs::path& io) {
  args.insert(args.begin(), {"timeout", "-k", "5", "120"});
  return mcc::test::run_process(std::move(args), io, "");
}

/// An HTTP proxy on 127.0.0.1 that answers nothing: it records the first line of every request
/// Chromium sends through it ("GET http://host/path HTTP/1.1", "CONNECT host:443 HTTP/1.1") and
/// closes the connection.
class RecordingProxy {
 public:
  RecordingProxy() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 64) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      return;
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { loop(); });
  }
  ~RecordingProxy() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    if (fd_ >= 0) ::close(fd_);
  }
  int port() const { return port_; }
  std::vector<std::string> requests() {
    std::lock_guard<std::mutex> l(m_);
    return requests_;
  }

 private:
  void loop() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) continue;
      std::string head;
      pollfd q{c, POLLIN, 0};
      if (::poll(&q, 1, 2000) > 0) {
        char buf[1024];
        const ssize_t n = ::recv(c, buf, sizeof buf, 0);
        if (n > 0) head.assign(buf, static_cast<size_t>(n));
      }
      ::close(c);
      std::lock_guard<std::mutex> l(m_);
      requests_.push_back(head.substr(0, head.find("\r\n")));
    }
  }
  int fd_ = -1, port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex m_;
  std::vector<std::string> requests_;
};

/// The host a proxied request line asks for.
std::string request_host(const std::string& line) {
  const size_t a = line.find(' ');
  if (a == std::string::npos) return "";
  std::string target = line.substr(a + 1, line.find(' ', a + 1) - a - 1);
  for (const char* scheme : {"http://", "https://"})
    if (target.rfind(scheme, 0) == 0) target = target.substr(std::string(scheme).size());
  return target.substr(0, target.find_first_of(":/"));
}

/// Chromium's own background services (update check and component downloads, account, time),
/// which it contacts whatever page it shows and which no flag of this version turns off completely.
bool chromium_service_host(const std::string& host) {
  for (const char* d : {"google.com", "googleapis.com", "gstatic.com", "gvt1.com"}) {
    const std::string dom(d);
    if (host == dom || (host.size() > dom.size() && host.compare(host.size() - dom.size() - 1, std::string::npos, "." + dom) == 0))
      return true;
  }
  return false;
}

std::vector<std::string> chromium_flags(const fs::path& profile, int proxy_port) {
  return {"--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + profile.string(),
          "--proxy-server=http://127.0.0.1:" + std::to_string(proxy_port),
          "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1", "--disable-background-networking",
          "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-default-apps",
          "--disable-extensions", "--no-pings", "--disable-domain-reliability",
          "--disable-features=NetworkTimeServiceQuerying,OptimizationHints,MediaRouter,Translate", "--window-size=1200,2000"};
}

uint32_t be32(const std::string& s, size_t at) {
  uint32_t v = 0;
  for (size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(s[at + i]);
  return v;
}

}  // namespace

TEST_CASE("html report: mnist int8 vs fp32 is one self-contained page with every chart") {
  MnistReport m;
  const std::string h = m.page();
  REQUIRE(!h.empty());
  CHECK(h.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(mcc::ir::is_valid_utf8(h));
  // Nothing to fetch: no URLs, no external references, no scripts.
  CHECK(h.find("http://") == std::string::npos);
  CHECK(h.find("https://") == std::string::npos);
  CHECK(h.find("src=") == std::string::npos);
  CHECK(h.find("href=") == std::string::npos);
  CHECK(h.find("url(") == std::string::npos);
  CHECK(h.find("@import") == std::string::npos);
  CHECK(h.find("<script") == std::string::npos);
  CHECK(h.find("<link") == std::string::npos);
  CHECK(h.find("default-src 'none'") != std::string::npos);

  // Verdict and the command that reproduces it.
  CHECK(m.j["passed"] == true);
  CHECK(h.find("<span class=\"verdict pass\">PASS</span>") != std::string::npos);
  CHECK(h.find("id=\"rules\"") != std::string::npos);
  CHECK(h.find("<td>Plus214_Output_0</td>") != std::string::npos);
  std::string cmd = mcc::test::mcc_binary().string();
  for (const auto& a : m.eval_args) cmd += " " + a;  // temp paths and flags need no shell quoting
  CHECK(h.find("<pre id=\"command\">" + cmd + "</pre>") != std::string::npos);

  // One SNR marker (and one introduced-SNR marker) per compared layer, the worst 6 highlighted.
  const auto& pl = m.j["per_layer"];
  const size_t compared = pl["compared"].get<size_t>();
  REQUIRE(compared >= 8);
  CHECK(count(h, "<svg id=\"snr-chart\"") == 1);
  CHECK(count(h, "<circle class=\"layer-point") == compared);
  CHECK(count(h, "<rect class=\"intro-point") == compared);
  CHECK(count(h, "<circle class=\"layer-point worst") == 6);
  CHECK(count(h, "class=\"tick-label\"") >= 8);  // both axes have labelled ticks
  for (const auto& l : pl["layers"])  // each marker names its layer, with a tooltip
    CHECK(count(h, "data-value=\"" + l["value"].get<std::string>() + "\"><title>") == 2);

  // Histograms of the worst 6 layers, in rank order; each has its quantization range or says why not.
  CHECK(count(h, "<svg class=\"histogram\"") == 6);
  size_t pos = 0;
  for (size_t i = 0; i < 6; ++i) {
    const std::string fig = "<figure class=\"activation\" data-value=\"" + pl["layers"][i]["value"].get<std::string>() + "\">";
    const size_t at = h.find(fig);
    CHECK_MESSAGE(at != std::string::npos, fig);
    CHECK(at >= pos);
    pos = at;
  }
  const size_t qmin = count(h, "<line class=\"qrange qmin\""), qmax = count(h, "<line class=\"qrange qmax\"");
  CHECK(qmin >= 1);  // the quantized MatMul's input and the pooled activation are among the worst
  CHECK(qmin == qmax);
  CHECK(qmin + count(h, "quantization: not quantized") == 6);
  CHECK(count(h, ", scale ") == qmin);
  CHECK(count(h, "<rect class=\"bin\"") >= 6 * 4);

  // Weight ranges of every Conv/MatMul among the worst 6 by SNR or by introduced error, with the
  // range of their quantization scales (every such layer is quantized here).
  size_t weighted = 0;
  for (const auto& l : pl["layers"]) {
    const std::string op = l["op"];
    if ((l["rank"].get<int>() > 6 && l["introduced_rank"].get<int>() > 6) || (op != "Conv" && op != "MatMul")) continue;
    ++weighted;
    CHECK_MESSAGE(h.find("<figure class=\"weights\" data-node=\"" + l["node"].get<std::string>() + "\">") != std::string::npos,
                  l["node"]);
  }
  CHECK(weighted >= 2);  // the MatMul (worst introduced error) and a Conv
  CHECK(count(h, "<svg class=\"weight-ranges\"") == weighted);
  CHECK(count(h, "<rect class=\"wrange\"") >= 10 + 8);  // 10 MatMul output columns, >= 8 Conv filters
  CHECK(count(h, "<line class=\"qscale\"") == 2 * count(h, "<rect class=\"wrange\""));
  CHECK(h.find("per-channel int8 (axis 0): marks at ±127 × scale") != std::string::npos);

  // Suggestion: this model quantizes well.
  CHECK(h.find("id=\"no-exclusion\"") != std::string::npos);

  // The same run again: byte-identical.
  const auto again = run_mcc(m.eval_args);
  REQUIRE(again.code == 0);
  CHECK(m.page() == h);
}

TEST_CASE("html report: names are escaped, the stage option is shown, output is deterministic") {
  mcc::report::HtmlReportData d;
  d.model = "m<1>.onnx";
  d.reference = "r&\"'.onnx";
  d.command = "mcc eval 'a b' \xff";
  d.rules = "int8: cosine >= 0.99";
  d.outputs.push_back({"out<script>", 2, 1, 0.5, 3.0, "s0: cosine 0.5 < 0.99"});
  mcc::judge::LayerStat l;
  l.value = "v\xfe<b>";
  l.node = "conv\"2";
  l.op = "Conv";
  l.order = 1;
  l.samples = 2;
  l.signal = 1, l.noise = 0.5;
  l.rank = 1, l.introduced_rank = 1;
  l.introduced_nsr = 0.5;
  d.per_layer.layers = {l};
  d.per_layer.samples = 2;
  d.per_layer.stage_option = "quantize{exclude=\"conv\\\"2\"}";
  mcc::report::HtmlHistogram hist;
  hist.value = l.value;
  hist.rank = 1;
  hist.lo = -1, hist.hi = 2;
  hist.counts = {1, 0, 5, 2};
  hist.quant = mcc::report::HtmlQuantRange{"int8", 0.1, 0, -12.8, 12.7, "q<1>"};
  d.histograms = {hist};
  const std::string h = mcc::report::render_html_report(d);
  CHECK(mcc::ir::is_valid_utf8(h));
  CHECK(h.find("<script>") == std::string::npos);
  CHECK(h.find("<b>") == std::string::npos);
  CHECK(h.find("out&lt;script&gt;") != std::string::npos);
  CHECK(h.find("data-value=\"v\\xfe&lt;b&gt;\"") != std::string::npos);
  CHECK(h.find("r&amp;&quot;&#39;.onnx") != std::string::npos);
  CHECK(h.find("<pre id=\"command\">mcc eval &#39;a b&#39; \\xff</pre>") != std::string::npos);
  CHECK(h.find("<pre id=\"stage-option\">quantize{exclude=&quot;conv\\&quot;2&quot;}</pre>") != std::string::npos);
  CHECK(h.find("<span class=\"verdict fail\">FAIL</span>") != std::string::npos);
  CHECK(count(h, "<circle class=\"layer-point worst") == 1);
  CHECK(count(h, "<rect class=\"bin\"") == 3);  // empty bins draw nothing
  CHECK(count(h, "class=\"qrange q") == 2);
  CHECK(h.find("None of the worst layers") != std::string::npos);
  CHECK(mcc::report::render_html_report(d) == h);
}

namespace {
using mcc::ir::DType;
using mcc::ir::Tensor;

/// Reference: X[1,2,1,1] -> Conv(W[3,2,1,1]) -> Y -> Relu -> R. Evaluated: X -> Q(u8, scale 0.02,
/// zp 10) -> DQ -> Conv(DQ(Wq int8 per channel, axis 0)) -> Y_pre -> Q(int16, 0.001) -> DQ -> Y
/// -> Relu -> R, with the quantized weight taken from `wq` (so a test can make it disagree).
struct QuantPair {
  mcc::ir::Model ref, q;
  mcc::judge::LayerStat conv;
  explicit QuantPair(std::vector<int8_t> wq) {
    const std::vector<float> w{0.5f, -1.0f, 0.25f, 0.125f, -2.0f, 2.0f};
    const std::vector<float> ws{1.0f / 127, 0.25f / 127, 2.0f / 127};
    for (auto* m : {&ref, &q}) {
      m->ir_version = 8;
      m->opset_imports.push_back({"", 13});
      m->graph = std::make_unique<mcc::ir::Graph>();
    }
    auto input = [](mcc::ir::Graph& g) {
      auto& x = g.add_value("X");
      x.is_graph_input = x.has_type = true;
      x.dtype = DType::F32;
      g.inputs.push_back(&x);
      return &x;
    };
    auto& gr = *ref.graph;
    auto& c = gr.add_node("Conv", "", "conv", {input(gr), &gr.add_initializer("W", Tensor::from_vector<float>({3, 2, 1, 1}, w))}, {"Y"});
    gr.add_node("Relu", "", "relu", {c.outputs[0]}, {"R"});
    auto& g = *q.graph;
    auto* x = input(g);
    auto& qx = g.add_node("QuantizeLinear", "", "qx", {x, &g.add_initializer("sx", Tensor::scalar<float>(0.02f)),
                                                        &g.add_initializer("zx", Tensor::scalar<uint8_t>(10))}, {"Xq"});
    auto& dqx = g.add_node("DequantizeLinear", "", "dqx", {qx.outputs[0], g.find_value("sx"), g.find_value("zx")}, {"Xd"});
    auto& dqw = g.add_node("DequantizeLinear", "", "dqw",
                           {&g.add_initializer("Wq", Tensor::from_vector<int8_t>({3, 2, 1, 1}, wq)),
                            &g.add_initializer("sw", Tensor::from_vector<float>({3}, ws)),
                            &g.add_initializer("zw", Tensor::from_vector<int8_t>({3}, {0, 0, 0}))}, {"Wd"});
    dqw.attrs = {mcc::ir::Attribute{"axis", mcc::ir::AttrKind::Int, int64_t{0}, "", "", ""}};
    auto& cq = g.add_node("Conv", "", "conv", {dqx.outputs[0], dqw.outputs[0]}, {"Y_pre"});
    auto& qy = g.add_node("QuantizeLinear", "", "qy", {cq.outputs[0], &g.add_initializer("sy", Tensor::scalar<float>(0.001f)),
                                                        &g.add_initializer("zy", Tensor::scalar<int16_t>(0))}, {"Yq"});
    auto& dqy = g.add_node("DequantizeLinear", "", "dqy", {qy.outputs[0], g.find_value("sy"), g.find_value("zy")}, {"Y"});
    g.add_node("Relu", "", "relu", {dqy.outputs[0]}, {"R"});
    conv.value = "Y", conv.node = "conv", conv.op = "Conv", conv.rank = 1, conv.introduced_rank = 1;
  }
};
}  // namespace

TEST_CASE("html report: quantization ranges read back from QuantizeLinear and DequantizeLinear") {
  QuantPair p({64, -127, 127, 64, -127, 127});  // the reference weights rounded with the scales
  std::string note;
  // A graph input read by a QuantizeLinear: uint8, zero point 10.
  auto rx = mcc::report::activation_quant_range(p.q, "X", note);
  REQUIRE(rx.has_value());
  CHECK(rx->type == "uint8");
  CHECK(rx->node == "qx");
  CHECK(rx->lo == doctest::Approx(-10 * 0.02));
  CHECK(rx->hi == doctest::Approx(245 * 0.02));
  CHECK(note.empty());
  // A value produced by DequantizeLinear(QuantizeLinear(...)): int16.
  auto ry = mcc::report::activation_quant_range(p.q, "Y", note);
  REQUIRE(ry.has_value());
  CHECK(ry->type == "int16");
  CHECK(ry->lo == doctest::Approx(-32768 * 0.001));
  CHECK(ry->hi == doctest::Approx(32767 * 0.001));
  CHECK_FALSE(mcc::report::activation_quant_range(p.q, "R", note).has_value());
  CHECK(note == "not quantized");

  // Weight ranges per output channel (axis 0) from the reference, marks at ±127 × scale.
  auto w = mcc::report::weight_ranges(p.q, p.ref, p.conv);
  REQUIRE(w.has_value());
  CHECK(w->weight == "W");
  CHECK(w->axis == 0);
  CHECK(w->ch_min == std::vector<double>{-1.0, 0.125, -2.0});
  CHECK(w->ch_max == std::vector<double>{0.5, 0.25, 2.0});
  REQUIRE(w->q_hi.size() == 3);
  CHECK(w->q_hi[0] == doctest::Approx(1.0));
  CHECK(w->q_lo[1] == doctest::Approx(-0.25));
  CHECK(w->q_hi[2] == doctest::Approx(2.0));
  CHECK(w->quant_note.find("per-channel int8 (axis 0): marks at ±127 × scale") != std::string::npos);
  CHECK(w->quant_note.find("differs") == std::string::npos);

  // A quantized weight that is not the reference's (as after folding a Mul into the Conv) is named.
  QuantPair folded({127, -127, 127, 64, -127, 127});
  w = mcc::report::weight_ranges(folded.q, folded.ref, folded.conv);
  REQUIRE(w.has_value());
  CHECK(w->quant_note.find("differs from the reference's by more than rounding") != std::string::npos);

  // A layer without a weight has no weight chart.
  mcc::judge::LayerStat relu;
  relu.value = "R", relu.node = "relu", relu.op = "Relu";
  CHECK_FALSE(mcc::report::weight_ranges(p.q, p.ref, relu).has_value());
}

TEST_CASE("html report: --html needs --per-layer and a writable path (exit 2)") {
  const fs::path golden = mcc::test::source_dir() / "golden" / "mnist";
  const std::string m = (golden / "model.onnx").string();
  mcc::test::TempDir tmp("mcc-html-usage");
  auto r = run_mcc({"eval", m, "--reference", m, "--random", "0", "--html", (tmp.path / "r.html").string()});
  CHECK(r.code == 2);
  CHECK(mcc::test::one_error_line(r.err));
  CHECK(r.err.find("--per-layer") != std::string::npos);
  r = run_mcc({"eval", m, "--reference", m, "--random", "0", "--per-layer", "--html", (tmp.path / "no" / "r.html").string()});
  CHECK(r.code == 2);
  CHECK(mcc::test::one_error_line(r.err));
  CHECK_FALSE(fs::exists(tmp.path / "no"));
}

TEST_CASE("html report: headless Chromium renders the charts and the page fetches nothing") {
  const std::string chromium = find_chromium();
  REQUIRE_MESSAGE(!chromium.empty(),
                  "chromium is not installed, so the HTML report cannot be rendered; run scripts/setup.sh "
                  "(it installs Debian's chromium package)");
  MnistReport m;
  const fs::path outdir = mcc::test::mcc_binary().parent_path() / "test_output" / "html_report";
  fs::create_directories(outdir);
  const fs::path page = outdir / "report.html", png = outdir / "report.png";
  fs::copy_file(m.html, page, fs::copy_options::overwrite_existing);
  fs::remove(png);
  const size_t compared = m.j["per_layer"]["compared"].get<size_t>();
  const std::string url = "file://" + fs::absolute(page).string();

  RecordingProxy proxy;
  REQUIRE(proxy.port() > 0);
  mcc::test::TempDir profile("mcc-chromium");
  auto flags = chromium_flags(profile.path / "profile", proxy.port());

  // Screenshot: a real PNG of the requested size with content (a blank page compresses to a few KB).
  std::vector<std::string> args{chromium};
  args.insert(args.end(), flags.begin(), flags.end());
  args.push_back("--screenshot=" + png.string());
  args.push_back(url);
  auto r = run_program(args, profile.path);
  INFO(r.err);
  CHECK(r.code == 0);
  const std::string img = mcc::test::slurp(png);
  REQUIRE(img.size() > 24);
  CHECK(img.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0);
  CHECK(img.compare(12, 4, "IHDR") == 0);
  CHECK(be32(img, 16) == 1200);
  CHECK(be32(img, 20) == 2000);
  CHECK(img.size() > 60000);

  // The DOM after parsing and layout holds every chart element.
  args = {chromium};
  args.insert(args.end(), flags.begin(), flags.end());
  args.push_back("--dump-dom");
  args.push_back(url);
  r = run_program(args, profile.path);
  INFO(r.err);
  CHECK(r.code == 0);
  const std::string& dom = r.out;
  CHECK(dom.find("<svg id=\"snr-chart\"") != std::string::npos);
  CHECK(count(dom, "<circle class=\"layer-point") == compared);
  CHECK(count(dom, "<svg class=\"histogram\"") == 6);
  CHECK(count(dom, "<line class=\"qrange qmin\"") >= 1);
  CHECK(count(dom, "<svg class=\"weight-ranges\"") >= 2);
  CHECK(dom.find("<span class=\"verdict pass\">PASS</span>") != std::string::npos);

  // Every request Chromium sent went to the recording proxy: none came from the page.
  std::vector<std::string> page_requests;
  for (const auto& q : proxy.requests())
    if (!chromium_service_host(request_host(q))) page_requests.push_back(q);
  std::string listed;
  for (const auto& q : page_requests) listed += "\n  page request: " + q;
  CHECK_MESSAGE(page_requests.empty(), "requests not sent by Chromium's own services:" << listed);

  // Control: a page that does fetch is seen by the same setup.
  const fs::path control = profile.path / "control.html";
  mcc::test::spit(control, "<!DOCTYPE html><html><body><img src=\"http://fetch-probe.invalid/x.png\"></body></html>\n");
  args = {chromium};
  args.insert(args.end(), flags.begin(), flags.end());
  args.push_back("--dump-dom");
  args.push_back("file://" + control.string());
  r = run_program(args, profile.path);
  CHECK(r.code == 0);
  bool seen = false;
  for (const auto& q : proxy.requests()) seen = seen || request_host(q) == "fetch-probe.invalid";
  CHECK_MESSAGE(seen, "the recording proxy did not see the control page's image request");
}
