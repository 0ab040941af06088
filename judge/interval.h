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

}  // namespace mcc::judge
