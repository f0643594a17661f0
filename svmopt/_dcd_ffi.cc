// One pass of dual coordinate descent for linear SVMs on the CPU, as an XLA FFI custom call.
//
// Algorithm 1 of Hsieh, Chang, Lin, Keerthi and Sundararajan (ICML 2008) with the random order of
// Section 3.1 and the shrinking of Section 3.2, over the dual
//
//   min_alpha 1/2 alpha^T (Q + D) alpha - lin^T alpha + eps ||alpha||_1,  lo_i <= alpha_i <= hi_i,
//   Q_ij = z_i.z_j, z_i = y_i x_i
//
// (lin = 1, eps = 0: the classification duals of LIBLINEAR's -s 1 / -s 3; lin = t, eps > 0, y = 1: the
// epsilon-insensitive regression duals of -s 12 / -s 13, whose coordinate step soft-thresholds)
//
// with w = sum_i alpha_i z_i kept up to date. The rows x_i and labels y_i come apart (z_i is formed on
// the fly: G = y_i x_i.w - 1 + D_ii alpha_i, w += (delta y_i) x_i), so a solve passes the operator's own
// arrays and holds no second, label-scaled copy of X. svmopt/solvers/dual_cd.py calls it once per pass (one
// driver step); the pure-XLA serial pass there is the reference it must match in distribution.
//
//   svmopt_dcd_pass_{f32,f64}
//     operands  w (d), alpha (n), coef (n, 6) = [D_ii, lo_i, hi_i, 1/Qbar_ii, lin_i, eps] per row,
//               vals, cols, ptr: the rows x_i, either CSR (vals (nnz), cols (nnz), ptr (n + 1)) or
//               dense (vals (n, d), cols and ptr empty), y (n) the labels, bias (1) or (0): a constant
//               feature of that value after the rows' d columns (LIBLINEAR's -B, not stored in X: w then
//               has d + 1 entries), active (n) bool, bounds (2) = [Mbar, mbar]
//               (eq. 16; +-inf: no shrinking), seed (2) uint32 (the pass's random order)
//     results   w' (d), alpha' (n), kept (n) bool (visited and not shrunk), extremes (2) = [M, m],
//               the largest and smallest projected gradient over the kept coordinates
//
// w and alpha are aliased to w' and alpha' by the caller when XLA can (no copy). Single-threaded:
// the updates are sequential by nature. Row pointers that decrease or leave [0, nnz] are reported
// as an error before anything is read through them; the columns must lie in [0, d) (the caller
// builds them so, once per solve: a per-entry check here would cost a fifth of the pass).
//
// The module exposes `registrations()` -> {target name: PyCapsule} for jax.ffi.register_ffi_target;
// dual_cd uses the XLA pass where the module is not built.

#include "_ffi_module.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

using svmopt_ffi::SplitMix64;

constexpr int64_t kCoefs = 6;  // per row: D_ii, lo_i, hi_i, 1/Qbar_ii, lin_i, eps

// The rows z_i: dense (kDense: n x d values, row-major) or CSR. The layout is a template
// parameter, so the inner loops carry no branch on it and the dense ones vectorize.
template <typename T, bool kDense>
struct Rows {
  const T* __restrict vals;
  const int32_t* __restrict cols;  // CSR only
  const int32_t* __restrict ptr;   // CSR only
  int64_t d;

  // a column index clamped into [0, d): the kernel never reads or writes outside w, whatever
  // the operator holds (a malformed one fails loudly in the CSR products instead). In the loop,
  // not as a clipped copy of the indices made by the caller: that copy cost sparse-gen 12-25 ms
  // (7.5M entries) every time newton's certificate asked for a pass
  int64_t col(int32_t c) const { return std::min<uint32_t>(uint32_t(c), uint32_t(d - 1)); }

  // four partial sums: the additions of one row do not wait on each other (and the dense loop
  // vectorizes without reassociating floating point)
  T dot(int64_t i, const T* __restrict w) const {
    T s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    if constexpr (kDense) {
      const T* __restrict z = vals + i * d;
      int64_t j = 0;
      for (; j + 4 <= d; j += 4) {
        s0 += z[j] * w[j];
        s1 += z[j + 1] * w[j + 1];
        s2 += z[j + 2] * w[j + 2];
        s3 += z[j + 3] * w[j + 3];
      }
      for (; j < d; ++j) s0 += z[j] * w[j];
    } else {
      int32_t p = ptr[i];
      const int32_t end = ptr[i + 1];
      for (; p + 4 <= end; p += 4) {
        s0 += vals[p] * w[col(cols[p])];
        s1 += vals[p + 1] * w[col(cols[p + 1])];
        s2 += vals[p + 2] * w[col(cols[p + 2])];
        s3 += vals[p + 3] * w[col(cols[p + 3])];
      }
      for (; p < end; ++p) s0 += vals[p] * w[col(cols[p])];
    }
    return (s0 + s1) + (s2 + s3);
  }
  void axpy(int64_t i, T c, T* __restrict w) const {
    if constexpr (kDense) {
      const T* __restrict z = vals + i * d;
      for (int64_t j = 0; j < d; ++j) w[j] += c * z[j];
    } else {
      for (int32_t p = ptr[i]; p < ptr[i + 1]; ++p) w[col(cols[p])] += c * vals[p];
    }
  }
};

// One pass over the coordinates in `order` (eq. 12, 16, 8, 9, 13); returns [M, m].
//
// The rows are visited in random order, so every row's records miss the cache; the order is
// known ahead, so they are prefetched: a row's pointers, coefficients and alpha kFar steps
// ahead, its entries (up to kLines cache lines of each array) kNear steps ahead, once its
// pointers have arrived. The prefetches are written out in the loop body: GCC treats a function
// that only prefetches as free of effects, so a helper (or lambda) it does not inline first is
// dropped with its calls, prefetches and all (GCC 12 did that to the lambdas of an earlier
// version here, and the pass ran 1.3-2x slower, dense rows 3x with the next point).
// The sweep is a function of raw pointers kept apart from the FFI entry (noinline): inlined
// there, GCC 12 vectorized none of its loops.
template <typename T, bool kDense, bool kBias>
__attribute__((noinline)) void Sweep(const Rows<T, kDense> z, const T* __restrict Y, const int32_t* __restrict order,
                                     size_t A, const T* __restrict cf, T* __restrict w, T* __restrict alpha,
                                     bool* __restrict kept, T Mbar, T mbar, T bias, T* ext) {
  constexpr size_t kFar = 16, kNear = 8;
  constexpr int64_t kLine = 64, kLines = 16;
  const int64_t d = z.d;
  const int32_t* __restrict P = z.ptr;
  const int64_t dense_bytes = std::min(d * int64_t(sizeof(T)), kLine * kLines);
  T M = -std::numeric_limits<T>::infinity(), m = std::numeric_limits<T>::infinity();
  for (size_t k = 0; k < A; ++k) {
    if (k + kFar < A) {
      const int64_t f = order[k + kFar];
      __builtin_prefetch(cf + kCoefs * f);
      __builtin_prefetch(alpha + f);
      __builtin_prefetch(Y + f);
      if constexpr (!kDense) __builtin_prefetch(P + f);
    }
    if (k + kNear < A) {
      const int64_t r = order[k + kNear];
      if constexpr (kDense) {
        const char* v = reinterpret_cast<const char*>(z.vals + r * d);
        for (int64_t o = 0; o < dense_bytes; o += kLine) __builtin_prefetch(v + o);
        __builtin_prefetch(v + dense_bytes - 1);  // the last line, when the row starts mid-line
      } else {
        const int64_t len = P[r + 1] - P[r];
        const char* v = reinterpret_cast<const char*>(z.vals + P[r]);
        const char* c = reinterpret_cast<const char*>(z.cols + P[r]);
        const int64_t vb = std::min(len * int64_t(sizeof(T)), kLine * kLines);
        const int64_t cb = std::min(len * int64_t(sizeof(int32_t)), kLine * kLines);
        for (int64_t o = 0; o < vb; o += kLine) __builtin_prefetch(v + o);
        if (vb > 0) __builtin_prefetch(v + vb - 1);
        for (int64_t o = 0; o < cb; o += kLine) __builtin_prefetch(c + o);
        if (cb > 0) __builtin_prefetch(c + cb - 1);
      }
    }
    const int32_t i = order[k];
    const T* c = cf + kCoefs * int64_t(i);
    const T Dii = c[0], lo = c[1], hi = c[2], invq = c[3], lin = c[4], eps = c[5];
    const T a = alpha[i], yi = Y[i];
    T xw = z.dot(i, w);
    if constexpr (kBias) xw += bias * w[d];  // w[d]: the bias feature's weight
    const T G = yi * xw - lin + Dii * a;  // eq. 12
    const T up = a >= 0 ? G + eps : G - eps, down = a > 0 ? G + eps : G - eps;  // one-sided derivatives
    const bool at_lo = a <= lo, at_hi = a >= hi;
    if ((at_lo && up > Mbar) || (at_hi && down < mbar)) continue;  // eq. 16: shrunk (stays at its bound)
    T pg = (!at_hi && up < 0) ? up : (!at_lo && down > 0) ? down : T(0);  // eq. 8
    if (lo >= hi) pg = 0;  // a fixed variable (weight 0) is optimal as it is
    M = std::max(M, pg);
    m = std::min(m, pg);
    kept[i] = true;
    T zi = a - G * invq;  // eq. 9, soft-thresholded by eps / Qbar_ii for the regression duals
    if (eps > 0) zi = zi > eps * invq ? zi - eps * invq : zi < -eps * invq ? zi + eps * invq : T(0);
    const T a_new = std::min(std::max(zi, lo), hi);
    if (a_new != a) {
      z.axpy(i, (a_new - a) * yi, w);  // eq. 13
      if constexpr (kBias) w[d] += bias * (a_new - a) * yi;
      alpha[i] = a_new;
    }
  }
  ext[0] = M;
  ext[1] = m;
}

template <ffi::DataType DT>
ffi::Error Pass(ffi::Buffer<DT> w_in, ffi::Buffer<DT> alpha_in, ffi::Buffer<DT> coef, ffi::Buffer<DT> vals,
                ffi::Buffer<ffi::S32> cols, ffi::Buffer<ffi::S32> ptr, ffi::Buffer<DT> labels, ffi::Buffer<DT> bias_in,
                ffi::Buffer<ffi::PRED> active,
                ffi::Buffer<DT> bounds, ffi::Buffer<ffi::U32> seed, ffi::ResultBuffer<DT> w_out,
                ffi::ResultBuffer<DT> alpha_out, ffi::ResultBuffer<ffi::PRED> kept_out,
                ffi::ResultBuffer<DT> extremes) {
  using T = ffi::NativeType<DT>;
  auto count = [](const auto& b) { return int64_t(b.element_count()); };
  auto rcount = [](auto& b) { return int64_t(b->element_count()); };
  const bool has_bias = count(bias_in) == 1;
  const int64_t dw = count(w_in), d = dw - (has_bias ? 1 : 0), n = count(alpha_in), nnz = count(vals);
  const bool sparse = count(ptr) > 0;
  if (count(coef) != kCoefs * n || count(labels) != n || count(active) != n || count(bounds) != 2 || count(seed) != 2 ||
      count(bias_in) > 1 || d < 1 || rcount(w_out) != dw || rcount(alpha_out) != n || rcount(kept_out) != n ||
      rcount(extremes) != 2)
    return ffi::Error::InvalidArgument("svmopt dcd: operand shapes do not match");
  if (sparse ? (count(ptr) != n + 1 || count(cols) != nnz) : (nnz != n * d))
    return ffi::Error::InvalidArgument("svmopt dcd: the rows do not match w and alpha");
  const int32_t* P = ptr.typed_data();
  const int32_t* C = cols.typed_data();
  if (sparse) {  // the row pointers are checked here (O(n)); the columns are clamped where they are read (Rows::col)
    for (int64_t i = 0; i < n; ++i)
      if (P[i] < 0 || P[i] > P[i + 1] || P[i + 1] > nnz)
        return ffi::Error::InvalidArgument("svmopt dcd: malformed CSR row pointers");
  }
  T* w = w_out->typed_data();
  T* alpha = alpha_out->typed_data();
  if (w != w_in.typed_data()) std::memcpy(w, w_in.typed_data(), sizeof(T) * dw);
  const T bias = has_bias ? bias_in.typed_data()[0] : T(0);
  if (alpha != alpha_in.typed_data()) std::memcpy(alpha, alpha_in.typed_data(), sizeof(T) * n);
  const T* cf = coef.typed_data();
  const bool* act = active.typed_data();
  bool* kept = kept_out->typed_data();
  const T Mbar = bounds.typed_data()[0], mbar = bounds.typed_data()[1];

  // the active coordinates in a fresh random order (Fisher-Yates)
  std::vector<int32_t> order;
  order.reserve(n);
  for (int64_t i = 0; i < n; ++i) {
    kept[i] = false;
    if (act[i]) order.push_back(int32_t(i));
  }
  SplitMix64 rng{(uint64_t(seed.typed_data()[0]) << 32) | seed.typed_data()[1]};
  for (size_t k = order.size(); k > 1; --k) std::swap(order[k - 1], order[rng.below(uint32_t(k))]);

  T* ext = extremes->typed_data();
  const Rows<T, false> csr{vals.typed_data(), C, P, d};
  const Rows<T, true> dense{vals.typed_data(), nullptr, nullptr, d};
  const T* Y = labels.typed_data();
  const size_t A = order.size();
  if (sparse && has_bias) Sweep<T, false, true>(csr, Y, order.data(), A, cf, w, alpha, kept, Mbar, mbar, bias, ext);
  else if (sparse) Sweep<T, false, false>(csr, Y, order.data(), A, cf, w, alpha, kept, Mbar, mbar, bias, ext);
  else if (has_bias) Sweep<T, true, true>(dense, Y, order.data(), A, cf, w, alpha, kept, Mbar, mbar, bias, ext);
  else Sweep<T, true, false>(dense, Y, order.data(), A, cf, w, alpha, kept, Mbar, mbar, bias, ext);
  return ffi::Error::Success();
}

}  // namespace

#define SVMOPT_DCD_BINDING(DT)         \
  ffi::Ffi::Bind()                     \
      .Arg<ffi::Buffer<DT>>()          \
      .Arg<ffi::Buffer<DT>>()          \
      .Arg<ffi::Buffer<DT>>()          \
      .Arg<ffi::Buffer<DT>>()          \
      .Arg<ffi::Buffer<ffi::S32>>()    \
      .Arg<ffi::Buffer<ffi::S32>>()    \
      .Arg<ffi::Buffer<DT>>()          \
      .Arg<ffi::Buffer<DT>>()          \
      .Arg<ffi::Buffer<ffi::PRED>>()   \
      .Arg<ffi::Buffer<DT>>()          \
      .Arg<ffi::Buffer<ffi::U32>>()    \
      .Ret<ffi::Buffer<DT>>()          \
      .Ret<ffi::Buffer<DT>>()          \
      .Ret<ffi::Buffer<ffi::PRED>>()   \
      .Ret<ffi::Buffer<DT>>()

XLA_FFI_DEFINE_HANDLER_SYMBOL(svmopt_dcd_pass_f32, Pass<ffi::F32>, SVMOPT_DCD_BINDING(ffi::F32));
XLA_FFI_DEFINE_HANDLER_SYMBOL(svmopt_dcd_pass_f64, Pass<ffi::F64>, SVMOPT_DCD_BINDING(ffi::F64));

SVMOPT_FFI_MODULE(_dcd_ffi, "svmopt dual CD pass (XLA FFI).",
                  SVMOPT_FFI_TARGET(svmopt_dcd_pass_f32),
                  SVMOPT_FFI_TARGET(svmopt_dcd_pass_f64))
