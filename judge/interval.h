// How sure a figure is: 95 % intervals for the figures verdicts rest on, and the three-way
// decision a budget takes from them. A figure whose estimate misses its budget fails; one whose
// whole interval meets it passes; one whose estimate meets the budget while its interval reaches
// past it is undecided — too few samples or tokens to tell, said so instead of passed.
//   mean of n values: mean +- 1.96 * sd / sqrt(n) (sd with n - 1; n < 2 gives an unbounded interval)
//   a share k of n:   Wilson score interval (well behaved at k = 0 and k = n)
// The intervals treat samples (or tokens) as independent; tokens of one text are not, so a token
// interval is a lower bound on the real uncertainty.
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace mcc::judge {

struct Interval {
  double lo = 0, hi = 0;
};

/// Running sum and sum of squares of a figure's values.
struct MeanAccumulator {
  int64_t n = 0;
  double sum = 0, sum_sq = 0;
  void add(double v) {
    ++n;
    sum += v;
    sum_sq += v * v;
  }
  double mean() const { return n ? sum / static_cast<double>(n) : 0.0; }
  Interval interval() const;
};

/// Wilson score interval of the share k / n (n > 0; [0, 1] when n == 0).
Interval share_interval(int64_t k, int64_t n);

/// "pass", "fail" or "undecided" (see the header comment).
std::string decide(double value, Interval iv, double threshold, bool higher_is_better);

/// A reported figure rounded to 6 decimals, so a recorded verdict reads the same on every machine.
double round6(double v);
/// An interval as a report holds it: [lo, hi], each end rounded (round6), an unbounded end null.
nlohmann::ordered_json interval_json(Interval iv);
/// "[lo, hi]" of interval_json's pair (%.6g; a null end reads -inf / inf).
std::string interval_text(const nlohmann::ordered_json& pair);

}  // namespace mcc::judge
