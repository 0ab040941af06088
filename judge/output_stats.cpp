// Folding per-sample metrics into an output's figures (see output_stats.h).
#include "judge/output_stats.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace mcc::judge {

double json_number(double v) { return std::isfinite(v) ? v : (v > 0 ? 1e308 : -1e308); }

std::string figure_text(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

void OutputStats::add(const backends::TensorMetrics& m) {
  ++samples;
  max_abs = std::max(max_abs, m.max_abs);
  max_rel = std::max(max_rel, m.max_rel);
  mean_abs_sum += m.mean_abs;
  cosine_sum += m.cosine;
  cosine_sq_sum += m.cosine * m.cosine;
  cosine_min = std::min(cosine_min, m.cosine);
  snr_min = std::min(snr_min, m.snr_db);
  atol_used = std::max(atol_used, m.atol_used);
  if (m.top1_agree) {
    ++top1_samples;
    top1_agree += *m.top1_agree ? 1 : 0;
  }
  rows += m.rows;
  row_cosine_sum += m.row_cosine_sum;
  row_cosine_min = std::min(row_cosine_min, m.row_cosine_min);
}

}  // namespace mcc::judge
