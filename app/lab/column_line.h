#pragma once
// A chart's line through many steps with no more points than the chart has pixel columns, and
// no step's value lost from sight: a run of 100,000 steps charted 240 pixels wide.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace onegpu::app {

// Points are added left to right (x never decreasing). Each pixel column keeps its first
// point, its highest and lowest, and its last, in the order they came: the line enters a
// column where the one before left it, a spike one step wide still reaches its height, and
// the line ends on the last value. P: any type with float members x and y.
template <class P>
class ColumnLine {
 public:
  void add(P p) {
    if (!column_.empty() && std::floor(p.x) != std::floor(column_.front().x)) close_column();
    column_.push_back(p);
  }
  // Every point kept so far, the open column's included.
  const std::vector<P>& points() {
    close_column();
    return line_;
  }

 private:
  void close_column() {
    if (column_.empty()) return;
    std::size_t lo = 0, hi = 0;
    for (std::size_t i = 1; i < column_.size(); ++i) {
      if (column_[i].y < column_[lo].y) lo = i;
      if (column_[i].y > column_[hi].y) hi = i;
    }
    std::size_t keep[4] = {0, lo, hi, column_.size() - 1};
    std::sort(keep, keep + 4);
    for (int k = 0; k < 4; ++k)
      if (k == 0 || keep[k] != keep[k - 1]) line_.push_back(column_[keep[k]]);
    column_.clear();
  }
  std::vector<P> column_, line_;
};

}  // namespace onegpu::app
