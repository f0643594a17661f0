// One pass of the sequential dual method for Crammer and Singer's multiclass SVM on the CPU, as an
// XLA FFI custom call.
//
// Keerthi, Sundararajan, Chang, Hsieh and Lin (KDD 2008), "A sequential dual method for large scale
// multi-class linear SVMs", as LIBLINEAR's Solver_MCSVM_CS (-s 4) runs it: the dual
//
//   min_alpha 1/2 sum_m ||w_m||^2 + sum_i sum_m e_i^m alpha_i^m,   w_m = sum_i alpha_i^m x_i,
//   sum_m alpha_i^m = 0,  alpha_i^m <= C_i delta(m, y_i),           e_i^m = 1 - delta(m, y_i)
//
// is minimized one sample at a time: for row i with A_i = ||x_i||^2 and G_m = e_i^m + w_m.x_i over
// its active classes, the K-variable sub-problem  min 1/2 A_i ||a||^2 + B.a, sum a = 0, a <= C_i
// delta (B_m = G_m - A_i alpha_i^m) is solved exactly by sorting D = B + A_i C_i e_y (the water level
// beta of Crammer and Singer's fixed-point), then w_m += (a_m - alpha_i^m) x_i. Shrinking as LIBLINEAR:
// a class at its bound whose G_m is below the row's smallest free G leaves the row's active set, and
// a row with at most one active class leaves the pass. svmopt/_mcsvm.py holds the pure-JAX pass with
// the same steps (the reference a test compares this one with) and the rules between passes.
//
//   svmopt_mcsvm_pass_{f32,f64}
//     operands  wt (d, K) the weights feature-major (LIBLINEAR's layout: row j holds w_1j .. w_Kj),
//               alpha (n, K), info (n, 2) = [C_i, A_i] per row, vals, cols, ptr: the rows x_i, CSR
//               (vals (nnz), cols (nnz), ptr (n + 1)) or dense (vals (n, d), cols and ptr empty),
//               y (n) int32 class codes 0..K-1, index (n, K) int32: each row's classes, its active
//               ones first, act (n) int32: how many are active (<= 1: the row is out of the pass),
//               seed (2) uint32 (the pass's random order)
//     results   wt', alpha', index', act', order (n) int32: the rows visited, in order (-1 after the
//               last), stats (2) = [the largest max G - min G over the rows that moved (-inf: none),
//               the active classes summed over the rows visited]
//
// Within a row the kept classes stay in their order, the shrunk ones follow (a stable partition).
// wt, alpha, index and act are aliased to their results by the caller. Single-threaded: the updates
// are sequential by nature. Row pointers and class codes are checked before anything is read through
// them; column indices and class indices are clamped into range where they are read.

#include "_ffi_module.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <vector>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

using svmopt_ffi::SplitMix64;

template <typename T>
struct Scratch {
  std::vector<T> G, B, D, dv;
  std::vector<int32_t> kept, shrunk, dc;
  explicit Scratch(int64_t K) : G(K), B(K), D(K), dv(K), kept(K), shrunk(K), dc(K) {}
};

// Visits the row's entries: f(column, value). Dense rows visit every column.
template <typename T, bool kDense, typename F>
inline void for_row(const T* __restrict vals, const int32_t* __restrict cols, const int32_t* __restrict ptr,
                    int64_t d, int64_t i, F&& f) {
  if constexpr (kDense) {
    const T* __restrict x = vals + i * d;
    for (int64_t j = 0; j < d; ++j)
      if (x[j] != T(0)) f(j, x[j]);
  } else {
    for (int32_t p = ptr[i]; p < ptr[i + 1]; ++p)
      f(std::min<uint32_t>(uint32_t(cols[p]), uint32_t(d - 1)), vals[p]);
  }
}

template <typename T, bool kDense>
__attribute__((noinline)) void Sweep(const T* __restrict vals, const int32_t* __restrict cols,
                                     const int32_t* __restrict ptr, int64_t d, int64_t K,
                                     const int32_t* __restrict order, size_t count, const T* __restrict info,
                                     const int32_t* __restrict Y, T* __restrict wt, T* __restrict alpha,
                                     int32_t* __restrict index, int32_t* __restrict act, T* stats) {
  Scratch<T> s(K);
  T* G = s.G.data();
  T* B = s.B.data();
  T* D = s.D.data();
  const T inf = std::numeric_limits<T>::infinity();
  T stop = -inf, work = 0;
  // The rows come in random order, so their records and the weights they touch miss the cache; the
  // order is known ahead, so they are prefetched (written out here: GCC drops prefetch-only helpers,
  // see _dcd_ffi.cc): a row's records kFar rows ahead, its entries kNear ahead, and (sparse rows) the
  // weight blocks of its first kEntries entries kW ahead, once its columns have arrived.
  constexpr size_t kFar = 16, kNear = 8, kW = 3;
  constexpr int64_t kLine = 64, kLines = 16, kEntries = 64;
  const int64_t dense_bytes = std::min<int64_t>(d * int64_t(sizeof(T)), kLine * kLines);
  const int64_t block = K * int64_t(sizeof(T));  // one feature's K weights
  for (size_t k = 0; k < count; ++k) {
    if (k + kFar < count) {
      const int64_t f = order[k + kFar];
      __builtin_prefetch(info + 2 * f);
      __builtin_prefetch(Y + f);
      __builtin_prefetch(act + f);
      __builtin_prefetch(index + f * K);
      __builtin_prefetch(reinterpret_cast<const char*>(index + f * K) + K * int64_t(sizeof(int32_t)) - 1);
      __builtin_prefetch(alpha + f * K);
      __builtin_prefetch(reinterpret_cast<const char*>(alpha + f * K) + block - 1);
      if constexpr (!kDense) __builtin_prefetch(ptr + f);
    }
    if (k + kNear < count) {
      const int64_t r = order[k + kNear];
      if constexpr (kDense) {
        const char* v = reinterpret_cast<const char*>(vals + r * d);
        for (int64_t o = 0; o < dense_bytes; o += kLine) __builtin_prefetch(v + o);
        __builtin_prefetch(v + dense_bytes - 1);
      } else {
        const int64_t len = ptr[r + 1] - ptr[r];
        const char* v = reinterpret_cast<const char*>(vals + ptr[r]);
        const char* c = reinterpret_cast<const char*>(cols + ptr[r]);
        const int64_t vb = std::min<int64_t>(len * int64_t(sizeof(T)), kLine * kLines);
        const int64_t cb = std::min<int64_t>(len * int64_t(sizeof(int32_t)), kLine * kLines);
        for (int64_t o = 0; o < vb; o += kLine) __builtin_prefetch(v + o);
        if (vb > 0) __builtin_prefetch(v + vb - 1);
        for (int64_t o = 0; o < cb; o += kLine) __builtin_prefetch(c + o);
        if (cb > 0) __builtin_prefetch(c + cb - 1);
      }
    }
    if constexpr (!kDense) {
      if (k + kW < count) {
        const int64_t r = order[k + kW];
        const int32_t end = std::min<int32_t>(ptr[r + 1], ptr[r] + int32_t(kEntries));
        for (int32_t p = ptr[r]; p < end; ++p) {
          const int64_t j = std::min<uint32_t>(uint32_t(cols[p]), uint32_t(d - 1));
          const char* wj = reinterpret_cast<const char*>(wt + j * K);
          __builtin_prefetch(wj);
          __builtin_prefetch(wj + block - 1);
        }
      }
    }
    const int64_t i = order[k];
    const T C = info[2 * i], A = info[2 * i + 1];
    const int32_t y = Y[i];
    int32_t* __restrict idx = index + i * K;
    T* __restrict al = alpha + i * K;
    const int32_t a = act[i];
    work += T(a);
    for (int32_t m = 0; m < a; ++m) {  // (clamped: a malformed index never reads outside the row)
      idx[m] = std::min<uint32_t>(uint32_t(idx[m]), uint32_t(K - 1));
      G[m] = idx[m] == y ? T(0) : T(1);
    }
    for_row<T, kDense>(vals, cols, ptr, d, i, [&](int64_t j, T v) {
      const T* __restrict wj = wt + j * K;
      for (int32_t m = 0; m < a; ++m) G[m] += wj[idx[m]] * v;
    });
    T minG = inf, maxG = -inf;
    for (int32_t m = 0; m < a; ++m) {
      const int32_t c = idx[m];
      if ((al[c] < 0 || (c == y && al[c] < C)) && G[m] < minG) minG = G[m];
      if (G[m] > maxG) maxG = G[m];
    }
    // shrinking: a class at its bound with G below every free one's stays there (a stable partition)
    int32_t na = 0, ns = 0;
    for (int32_t m = 0; m < a; ++m) {
      const int32_t c = idx[m];
      const T bound = c == y ? C : T(0);
      if (al[c] == bound && G[m] < minG) {
        s.shrunk[ns++] = c;
      } else {
        G[na] = G[m];
        s.kept[na++] = c;
      }
    }
    for (int32_t m = 0; m < na; ++m) idx[m] = s.kept[m];
    for (int32_t m = 0; m < ns; ++m) idx[na + m] = s.shrunk[m];
    act[i] = na;
    if (na <= 1 || !(maxG - minG > T(1e-12))) continue;
    stop = std::max(stop, maxG - minG);
    // the sub-problem: D = B + A C e_y sorted down, beta from its largest entries
    int32_t ypos = -1;
    for (int32_t m = 0; m < na; ++m) {
      const int32_t c = idx[m];
      B[m] = G[m] - A * al[c];
      D[m] = B[m];
      if (c == y) {
        ypos = m;
        D[m] += A * C;
      }
    }
    std::sort(D, D + na, std::greater<T>());
    T beta = D[0] - A * C;
    int32_t r = 1;
    for (; r < na && beta < T(r) * D[r]; ++r) beta += D[r];
    beta /= T(r);
    int32_t nz = 0;
    for (int32_t m = 0; m < na; ++m) {
      const int32_t c = idx[m];
      const T anew = std::min(m == ypos ? C : T(0), (beta - B[m]) / A);
      const T delta = anew - al[c];
      al[c] = anew;
      if (delta != T(0)) {
        s.dc[nz] = c;
        s.dv[nz++] = delta;
      }
    }
    if (nz == 0) continue;
    const int32_t* __restrict dc = s.dc.data();
    const T* __restrict dv = s.dv.data();
    for_row<T, kDense>(vals, cols, ptr, d, i, [&](int64_t j, T v) {
      T* __restrict wj = wt + j * K;
      for (int32_t m = 0; m < nz; ++m) wj[dc[m]] += dv[m] * v;
    });
  }
  stats[0] = stop;
  stats[1] = work;
}

template <ffi::DataType DT>
ffi::Error Pass(ffi::Buffer<DT> wt_in, ffi::Buffer<DT> alpha_in, ffi::Buffer<DT> info, ffi::Buffer<DT> vals,
                ffi::Buffer<ffi::S32> cols, ffi::Buffer<ffi::S32> ptr, ffi::Buffer<ffi::S32> labels,
                ffi::Buffer<ffi::S32> index_in, ffi::Buffer<ffi::S32> act_in, ffi::Buffer<ffi::U32> seed,
                ffi::ResultBuffer<DT> wt_out, ffi::ResultBuffer<DT> alpha_out, ffi::ResultBuffer<ffi::S32> index_out,
                ffi::ResultBuffer<ffi::S32> act_out, ffi::ResultBuffer<ffi::S32> order_out,
                ffi::ResultBuffer<DT> stats) {
  using T = ffi::NativeType<DT>;
  auto count = [](const auto& b) { return int64_t(b.element_count()); };
  auto rcount = [](auto& b) { return int64_t(b->element_count()); };
  const int64_t n = count(act_in), nnz = count(vals);
  if (n == 0 || count(alpha_in) % n != 0)
    return ffi::Error::InvalidArgument("svmopt mcsvm: alpha is not (n, K)");
  const int64_t K = count(alpha_in) / n;
  if (K < 1 || count(wt_in) % K != 0) return ffi::Error::InvalidArgument("svmopt mcsvm: wt is not (d, K)");
  const int64_t d = count(wt_in) / K;
  const bool sparse = count(ptr) > 0;
  if (count(info) != 2 * n || count(labels) != n || count(index_in) != n * K || count(seed) != 2 ||
      rcount(wt_out) != d * K || rcount(alpha_out) != n * K || rcount(index_out) != n * K || rcount(act_out) != n ||
      rcount(order_out) != n || rcount(stats) != 2 || d < 1)
    return ffi::Error::InvalidArgument("svmopt mcsvm: operand shapes do not match");
  if (sparse ? (count(ptr) != n + 1 || count(cols) != nnz) : (nnz != n * d))
    return ffi::Error::InvalidArgument("svmopt mcsvm: the rows do not match wt and alpha");
  const int32_t* P = ptr.typed_data();
  if (sparse) {
    for (int64_t i = 0; i < n; ++i)
      if (P[i] < 0 || P[i] > P[i + 1] || P[i + 1] > nnz)
        return ffi::Error::InvalidArgument("svmopt mcsvm: malformed CSR row pointers");
  }
  const int32_t* Y = labels.typed_data();
  for (int64_t i = 0; i < n; ++i)
    if (Y[i] < 0 || Y[i] >= K) return ffi::Error::InvalidArgument("svmopt mcsvm: a class code is outside 0..K-1");
  T* wt = wt_out->typed_data();
  T* alpha = alpha_out->typed_data();
  int32_t* index = index_out->typed_data();
  int32_t* act = act_out->typed_data();
  if (wt != wt_in.typed_data()) std::memcpy(wt, wt_in.typed_data(), sizeof(T) * d * K);
  if (alpha != alpha_in.typed_data()) std::memcpy(alpha, alpha_in.typed_data(), sizeof(T) * n * K);
  if (index != index_in.typed_data()) std::memcpy(index, index_in.typed_data(), sizeof(int32_t) * n * K);
  if (act != act_in.typed_data()) std::memcpy(act, act_in.typed_data(), sizeof(int32_t) * n);
  // the rows still in the pass, in a fresh random order (Fisher-Yates)
  int32_t* order = order_out->typed_data();
  size_t A = 0;
  for (int64_t i = 0; i < n; ++i) {
    act[i] = std::min<int32_t>(std::max<int32_t>(act[i], 0), int32_t(K));
    if (act[i] > 1) order[A++] = int32_t(i);
  }
  for (int64_t k = A; k < n; ++k) order[k] = -1;
  SplitMix64 rng{(uint64_t(seed.typed_data()[0]) << 32) | seed.typed_data()[1]};
  for (size_t k = A; k > 1; --k) std::swap(order[k - 1], order[rng.below(uint32_t(k))]);
  if (sparse)
    Sweep<T, false>(vals.typed_data(), cols.typed_data(), P, d, K, order, A, info.typed_data(), Y, wt, alpha, index,
                    act, stats->typed_data());
  else
    Sweep<T, true>(vals.typed_data(), nullptr, nullptr, d, K, order, A, info.typed_data(), Y, wt, alpha, index, act,
                   stats->typed_data());
  return ffi::Error::Success();
}

}  // namespace

#define SVMOPT_MCSVM_BINDING(DT)       \
  ffi::Ffi::Bind()                     \
      .Arg<ffi::Buffer<DT>>()          \
      .Arg<ffi::Buffer<DT>>()          \
      .Arg<ffi::Buffer<DT>>()          \
      .Arg<ffi::Buffer<DT>>()          \
      .Arg<ffi::Buffer<ffi::S32>>()    \
      .Arg<ffi::Buffer<ffi::S32>>()    \
      .Arg<ffi::Buffer<ffi::S32>>()    \
      .Arg<ffi::Buffer<ffi::S32>>()    \
      .Arg<ffi::Buffer<ffi::S32>>()    \
      .Arg<ffi::Buffer<ffi::U32>>()    \
      .Ret<ffi::Buffer<DT>>()          \
      .Ret<ffi::Buffer<DT>>()          \
      .Ret<ffi::Buffer<ffi::S32>>()    \
      .Ret<ffi::Buffer<ffi::S32>>()    \
      .Ret<ffi::Buffer<ffi::S32>>()    \
      .Ret<ffi::Buffer<DT>>()

XLA_FFI_DEFINE_HANDLER_SYMBOL(svmopt_mcsvm_pass_f32, Pass<ffi::F32>, SVMOPT_MCSVM_BINDING(ffi::F32));
XLA_FFI_DEFINE_HANDLER_SYMBOL(svmopt_mcsvm_pass_f64, Pass<ffi::F64>, SVMOPT_MCSVM_BINDING(ffi::F64));

SVMOPT_FFI_MODULE(_mcsvm_ffi, "svmopt Crammer-Singer sequential dual pass (XLA FFI).",
                  SVMOPT_FFI_TARGET(svmopt_mcsvm_pass_f32),
                  SVMOPT_FFI_TARGET(svmopt_mcsvm_pass_f64))
