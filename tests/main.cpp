// doctest main with the no-assertion guard: any test case that makes zero assertions fails the run.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <string>
#include <vector>

namespace {
std::vector<std::string>& assertless() {
  static std::vector<std::string> v;
  return v;
}

struct NoAssertGuard : doctest::IReporter {
  explicit NoAssertGuard(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_start(const doctest::TestCaseData& d) override { name_ = d.m_name; }
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats& st) override {
    if (st.numAssertsCurrentTest == 0 && !skipped_) assertless().push_back(name_);
  }
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override { skipped_ = true; }

 private:
  std::string name_;
  bool skipped_ = false;
};
}  // namespace

REGISTER_LISTENER("no_assert_guard", 1, NoAssertGuard);

int main(int argc, char** argv) {
  doctest::Context ctx(argc, argv);
  const int rc = ctx.run();
  if (ctx.shouldExit()) return rc;
  if (!assertless().empty()) {
    std::fprintf(stderr, "\n%zu test case(s) made no assertion (a test that asserts nothing fails):\n",
                 assertless().size());
    for (const auto& n : assertless()) std::fprintf(stderr, "  - %s\n", n.c_str());
    return rc != 0 ? rc : 1;
  }
  return rc;
}
