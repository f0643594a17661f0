// The inner solve of proximal Newton for l1-regularized linear models (newGLMNET) on the CPU, as an
// XLA FFI custom call.
//
// Yuan, Ho and Lin (2012), "An improved GLMNET for L1-regularized logistic regression", Section 3:
// at an outer iterate w, with the smooth part's gradient G and the loss's curvature D_i per row, the
// direction d approximately minimizes the quadratic model plus the l1 term
//
//   q(d) = G.d + 1/2 d^T (X^T D X + c I) d + lam ||w + d||_1,       c = l2 weight + nu
//
// by coordinate descent over the columns: one pass visits the active coordinates in a random order
// and solves each one-variable problem exactly (soft threshold of a Newton step), keeping
// Xd = X d up to date; coordinates at zero whose model gradient lies well inside [-lam, lam] are
// shrunk (Section 3.3's rule with the largest violation of the previous pass). The passes stop
// when the sum of violations is below `tol`; if coordinates were shrunk, once more over every
// active coordinate before that is believed. svmopt/solvers/newglmnet.py runs it once per outer
// step and does the rest (gradient, shrinking of the outer active set, line search) in JAX.
//
//   svmopt_l1cd_{f32,f64}
//     operands  w (m), G (m), D (n), vals, idx, ptr: the columns of X, either CSC (vals (nnz), idx (nnz)
//               row ids, ptr (d + 1)) or dense transposed (vals (d, n), idx and ptr empty); m = d, or
//               d + 1 where the last coordinate is a free intercept (a column of ones, no l1 term);
//               active (m) bool; params (4) = [lam, c, tol, max passes]; seed (2) uint32
//     results   w + d (m), Xd (n) (the intercept's part included), stats (2) = [passes, last pass's
//               sum of violations]
//
// Single-threaded: coordinate descent is sequential by nature. Column pointers that decrease or leave
// [0, nnz] are an error before anything is read; row ids are clamped into [0, n) where they are read.

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

// Column j of X: CSC or a row of the dense transpose; j == d is the intercept's column of ones.
template <typename T, bool kDense>
struct Cols {
  const T* __restrict vals;
  const int32_t* __restrict idx;
  const int32_t* __restrict ptr;
  int64_t n, d;

  int64_t row(int32_t r) const { return std::min<uint32_t>(uint32_t(r), uint32_t(n - 1)); }

  // sum_i x_ij a_i b_i
  T dot2(int64_t j, const T* __restrict a, const T* __restrict b) const {
    T s0 = 0, s1 = 0;
    if (j == d) {
      for (int64_t i = 0; i < n; ++i) s0 += a[i] * b[i];
    } else if constexpr (kDense) {
      const T* __restrict x = vals + j * n;
      int64_t i = 0;
      for (; i + 2 <= n; i += 2) {
        s0 += x[i] * a[i] * b[i];
        s1 += x[i + 1] * a[i + 1] * b[i + 1];
      }
      for (; i < n; ++i) s0 += x[i] * a[i] * b[i];
    } else {  // four partial sums: the additions do not wait on each other
      T s2 = 0, s3 = 0;
      int32_t p = ptr[j];
      const int32_t end = ptr[j + 1];
      for (; p + 4 <= end; p += 4) {
        const int64_t i0 = row(idx[p]), i1 = row(idx[p + 1]), i2 = row(idx[p + 2]), i3 = row(idx[p + 3]);
        s0 += vals[p] * a[i0] * b[i0];
        s1 += vals[p + 1] * a[i1] * b[i1];
        s2 += vals[p + 2] * a[i2] * b[i2];
        s3 += vals[p + 3] * a[i3] * b[i3];
      }
      for (; p < end; ++p) {
        const int64_t i = row(idx[p]);
        s0 += vals[p] * a[i] * b[i];
      }
      s0 += s2;
      s1 += s3;
    }
    return s0 + s1;
  }
  // sum_i x_ij^2 a_i
  T sq(int64_t j, const T* __restrict a) const {
    T s = 0;
    if (j == d) {
      for (int64_t i = 0; i < n; ++i) s += a[i];
    } else if constexpr (kDense) {
      const T* __restrict x = vals + j * n;
      for (int64_t i = 0; i < n; ++i) s += x[i] * x[i] * a[i];
    } else {
      for (int32_t p = ptr[j]; p < ptr[j + 1]; ++p) s += vals[p] * vals[p] * a[row(idx[p])];
    }
    return s;
  }
  // v += z x_j
  void axpy(int64_t j, T z, T* __restrict v) const {
    if (j == d) {
      for (int64_t i = 0; i < n; ++i) v[i] += z;
    } else if constexpr (kDense) {
      const T* __restrict x = vals + j * n;
      for (int64_t i = 0; i < n; ++i) v[i] += z * x[i];
    } else {
      for (int32_t p = ptr[j]; p < ptr[j + 1]; ++p) v[row(idx[p])] += z * vals[p];
    }
  }
};

// The passes; returns {passes, last sum of violations}.
template <typename T, bool kDense>
__attribute__((noinline)) void Passes(const Cols<T, kDense> X, const T* __restrict w, const T* __restrict G,
                                      const T* __restrict D, std::vector<int32_t> order, T lam, T c, T tol,
                                      int64_t max_passes, SplitMix64 rng, T* __restrict wpd, T* __restrict Xd,
                                      T* stats) {
  const T inf = std::numeric_limits<T>::infinity();
  const std::vector<int32_t> full = order;  // every active coordinate, for the check after shrinking
  // H_j of the active coordinates (the intercept's at index d)
  std::vector<T> Hcol(X.d + 1, T(0));
  for (int32_t j : order) Hcol[j] = X.sq(j, D) + c;
  size_t size = order.size();
  T Gmax_old = inf, sum = 0;
  int64_t pass = 0;
  const T n = T(X.n);
  while (pass < max_passes) {
    if (pass + 1 == max_passes && size < full.size()) {  // the last pass allowed looks at every coordinate
      size = full.size();
      order = full;
      Gmax_old = inf;
    }
    for (size_t k = size; k > 1; --k) std::swap(order[k - 1], order[rng.below(uint32_t(k))]);
    T Gmax = 0;
    sum = 0;
    for (size_t k = 0; k < size; ++k) {
      const int32_t j = order[k];
      const T H = Hcol[j];
      const T wj = wpd[j];
      const T lj = (j == X.d) ? T(0) : lam;
      const T g = G[j] + c * (wj - w[j]) + X.dot2(j, D, Xd);
      const T gp = g + lj, gn = g - lj;
      T viol = 0;
      if (wj == 0) {
        if (gp < 0)
          viol = -gp;
        else if (gn > 0)
          viol = gn;
        else if (gp > Gmax_old / n && gn < -Gmax_old / n) {  // shrunk for the rest of these passes
          --size;
          std::swap(order[k], order[size]);
          --k;
          continue;
        }
      } else {
        viol = wj > 0 ? std::fabs(gp) : std::fabs(gn);
      }
      Gmax = std::max(Gmax, viol);
      sum += viol;
      T z;
      if (gp < H * wj)
        z = -gp / H;
      else if (gn > H * wj)
        z = -gn / H;
      else
        z = -wj;
      if (!(std::fabs(z) >= T(1e-12))) continue;  // (also a NaN: nothing moves)
      z = std::min(std::max(z, T(-10)), T(10));  // as LIBLINEAR: a bounded move per visit
      wpd[j] = wj + z;
      X.axpy(j, z, Xd);
    }
    ++pass;
    if (sum <= tol) {
      if (size == full.size()) break;
      size = full.size();  // shrunk coordinates: one more look at all of them before stopping
      order = full;
      Gmax_old = inf;
      continue;
    }
    Gmax_old = Gmax;
  }
  stats[0] = T(pass);
  stats[1] = sum;
}

template <ffi::DataType DT>
ffi::Error Solve(ffi::Buffer<DT> w_in, ffi::Buffer<DT> grad, ffi::Buffer<DT> curv, ffi::Buffer<DT> vals,
                 ffi::Buffer<ffi::S32> idx, ffi::Buffer<ffi::S32> ptr, ffi::Buffer<ffi::PRED> active,
                 ffi::Buffer<DT> params, ffi::Buffer<ffi::U32> seed, ffi::ResultBuffer<DT> wpd_out,
                 ffi::ResultBuffer<DT> xd_out, ffi::ResultBuffer<DT> stats_out) {
  using T = ffi::NativeType<DT>;
  auto count = [](const auto& b) { return int64_t(b.element_count()); };
  auto rcount = [](auto& b) { return int64_t(b->element_count()); };
  const int64_t m = count(w_in), n = count(curv), nnz = count(vals);
  const bool sparse = count(ptr) > 0;
  const int64_t d = sparse ? count(ptr) - 1 : (n > 0 ? nnz / n : 0);
  if (count(grad) != m || count(active) != m || count(params) != 4 || count(seed) != 2 || rcount(wpd_out) != m ||
      rcount(xd_out) != n || rcount(stats_out) != 2 || !(m == d || m == d + 1) || n == 0)
    return ffi::Error::InvalidArgument("svmopt l1cd: operand shapes do not match");
  if (sparse ? (count(idx) != nnz) : (nnz != n * d))
    return ffi::Error::InvalidArgument("svmopt l1cd: the columns do not match w and D");
  const int32_t* P = ptr.typed_data();
  if (sparse) {
    for (int64_t j = 0; j < d; ++j)
      if (P[j] < 0 || P[j] > P[j + 1] || P[j + 1] > nnz)
        return ffi::Error::InvalidArgument("svmopt l1cd: malformed CSC column pointers");
  }
  const T* w = w_in.typed_data();
  T* wpd = wpd_out->typed_data();
  T* Xd = xd_out->typed_data();
  std::memcpy(wpd, w, sizeof(T) * m);
  std::fill(Xd, Xd + n, T(0));
  const T* pr = params.typed_data();
  const T lam = pr[0], c = pr[1], tol = pr[2];
  const int64_t max_passes = std::isfinite(double(pr[3])) ? std::max<int64_t>(0, int64_t(pr[3])) : 0;
  std::vector<int32_t> order;
  order.reserve(m);
  const bool* act = active.typed_data();
  for (int64_t j = 0; j < m; ++j)
    if (act[j]) order.push_back(int32_t(j));
  SplitMix64 rng{(uint64_t(seed.typed_data()[0]) << 32) | seed.typed_data()[1]};
  T* stats = stats_out->typed_data();
  if (sparse)
    Passes<T, false>({vals.typed_data(), idx.typed_data(), P, n, d}, w, grad.typed_data(), curv.typed_data(),
                     std::move(order), lam, c, tol, max_passes, rng, wpd, Xd, stats);
  else
    Passes<T, true>({vals.typed_data(), nullptr, nullptr, n, d}, w, grad.typed_data(), curv.typed_data(),
                    std::move(order), lam, c, tol, max_passes, rng, wpd, Xd, stats);
  return ffi::Error::Success();
}

// CSR -> CSC by a counting sort (stable: each column's entries in row order), O(nnz + n + d). Under
// XLA the same transpose is a sort of the column indices: 150 ms on a9a (451k entries) per solve,
// against the ~10 ms of a first outer step. Column indices outside [0, d) are an error.
template <ffi::DataType DT>
ffi::Error Transpose(ffi::Buffer<DT> data, ffi::Buffer<ffi::S32> indices, ffi::Buffer<ffi::S32> indptr,
                     ffi::ResultBuffer<DT> vals_out, ffi::ResultBuffer<ffi::S32> rows_out,
                     ffi::ResultBuffer<ffi::S32> ptr_out) {
  using T = ffi::NativeType<DT>;
  const int64_t nnz = int64_t(data.element_count()), n = int64_t(indptr.element_count()) - 1;
  const int64_t d = int64_t(ptr_out->element_count()) - 1;
  if (n < 0 || d < 0 || int64_t(indices.element_count()) != nnz || int64_t(vals_out->element_count()) != nnz ||
      int64_t(rows_out->element_count()) != nnz)
    return ffi::Error::InvalidArgument("svmopt csc: operand shapes do not match");
  const int32_t* P = indptr.typed_data();
  const int32_t* J = indices.typed_data();
  for (int64_t i = 0; i < n; ++i)
    if (P[i] < 0 || P[i] > P[i + 1] || P[i + 1] > nnz)
      return ffi::Error::InvalidArgument("svmopt csc: malformed CSR row pointers");
  int32_t* Q = ptr_out->typed_data();
  std::fill(Q, Q + d + 1, 0);
  const int64_t used = n > 0 ? P[n] : 0;
  for (int64_t p = 0; p < used; ++p) {
    if (J[p] < 0 || J[p] >= d) return ffi::Error::InvalidArgument("svmopt csc: a column index outside [0, d)");
    ++Q[J[p] + 1];
  }
  for (int64_t j = 0; j < d; ++j) Q[j + 1] += Q[j];
  std::vector<int32_t> next(Q, Q + d);
  const T* V = data.typed_data();
  T* vo = vals_out->typed_data();
  int32_t* ro = rows_out->typed_data();
  for (int64_t i = 0; i < n; ++i)
    for (int32_t p = P[i]; p < P[i + 1]; ++p) {
      const int32_t q = next[J[p]]++;
      vo[q] = V[p];
      ro[q] = int32_t(i);
    }
  for (int64_t q = used; q < nnz; ++q) {  // entries past the last row pointer (none in svmopt's CSR)
    vo[q] = T(0);
    ro[q] = 0;
  }
  return ffi::Error::Success();
}

}  // namespace

#define SVMOPT_CSC_BINDING(DT)                                                                       \
  ffi::Ffi::Bind().Arg<ffi::Buffer<DT>>().Arg<ffi::Buffer<ffi::S32>>().Arg<ffi::Buffer<ffi::S32>>() \
      .Ret<ffi::Buffer<DT>>().Ret<ffi::Buffer<ffi::S32>>().Ret<ffi::Buffer<ffi::S32>>()

XLA_FFI_DEFINE_HANDLER_SYMBOL(svmopt_csc_f32, Transpose<ffi::F32>, SVMOPT_CSC_BINDING(ffi::F32));
XLA_FFI_DEFINE_HANDLER_SYMBOL(svmopt_csc_f64, Transpose<ffi::F64>, SVMOPT_CSC_BINDING(ffi::F64));

#define SVMOPT_L1CD_BINDING(DT)       \
  ffi::Ffi::Bind()                    \
      .Arg<ffi::Buffer<DT>>()         \
      .Arg<ffi::Buffer<DT>>()         \
      .Arg<ffi::Buffer<DT>>()         \
      .Arg<ffi::Buffer<DT>>()         \
      .Arg<ffi::Buffer<ffi::S32>>()   \
      .Arg<ffi::Buffer<ffi::S32>>()   \
      .Arg<ffi::Buffer<ffi::PRED>>()  \
      .Arg<ffi::Buffer<DT>>()         \
      .Arg<ffi::Buffer<ffi::U32>>()   \
      .Ret<ffi::Buffer<DT>>()         \
      .Ret<ffi::Buffer<DT>>()         \
      .Ret<ffi::Buffer<DT>>()

XLA_FFI_DEFINE_HANDLER_SYMBOL(svmopt_l1cd_f32, Solve<ffi::F32>, SVMOPT_L1CD_BINDING(ffi::F32));
XLA_FFI_DEFINE_HANDLER_SYMBOL(svmopt_l1cd_f64, Solve<ffi::F64>, SVMOPT_L1CD_BINDING(ffi::F64));

SVMOPT_FFI_MODULE(_l1cd_ffi, "svmopt proximal Newton inner coordinate descent (XLA FFI).",
                  SVMOPT_FFI_TARGET(svmopt_l1cd_f32),
                  SVMOPT_FFI_TARGET(svmopt_l1cd_f64),
                  SVMOPT_FFI_TARGET(svmopt_csc_f32),
                  SVMOPT_FFI_TARGET(svmopt_csc_f64))
