#pragma once
// Central finite differences for the gradient checks. Everything runs in fp32 (the model in its
// exact mode, without bf16 rounding); the objective is summed in double.
#include <cmath>
#include <functional>
#include <string>

#include <gtest/gtest.h>

namespace onegpu::trainer::test {

// Tolerance used by every check: |analytic - numeric| <= kAbsTol + kRelTol * max(|a|, |n|).
inline constexpr double kAbsTol = 2e-3;
inline constexpr double kRelTol = 2e-2;

// Numeric derivative of f with respect to *x (step h), restoring *x.
inline double numeric_grad(float* x, double h, const std::function<double()>& f) {
  float old = *x;
  *x = (float)(old + h);
  double up = f();
  *x = (float)(old - h);
  double down = f();
  double step = (double)(float)(old + h) - (double)(float)(old - h);  // the step fp32 really took
  *x = old;
  return (up - down) / step;
}

inline ::testing::AssertionResult grads_close(double a, double n, const std::string& what) {
  double tol = kAbsTol + kRelTol * std::max(std::fabs(a), std::fabs(n));
  if (std::fabs(a - n) <= tol && std::isfinite(a)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": analytic " << a << " vs numeric " << n << " (tol " << tol << ")";
}

}  // namespace onegpu::trainer::test
