// CSR sparse-times-dense products for the CPU backend, as XLA FFI custom calls.
//
//   svmopt_csr_matvec_{f32,f64}   (data, indices, indptr, row_ids, x)  ->  y = x X^T
//   svmopt_csr_rmatvec_{f32,f64}  (data, indices, indptr, row_ids, u)  ->  z = u X
//   svmopt_csr_hvp_{f32,f64}      (data, indices, indptr, row_ids, v, D, c)  ->  (X^T (D (X v + c)),
//                                 sum D (X v + c)) in one walk over the rows (see hvp_rows)
//   svmopt_csr_keep_rows          (indptr, indices, keep)  ->  the kept rows first (see KeepRows)
//
// X is n x d in CSR (int32 indices/indptr); x is (K, d), y (K, n), u (K, n), z (K, d),
// all with K as the minor (fastest) dimension, so a row of K values is contiguous: the
// Python side asks XLA for that layout. K = 1 is the plain X w / X^T u. row_ids is not
// read here (the pure-XLA path uses it); it is an operand so both lowerings share one
// primitive. Large products are split over XLA's intra-op thread pool (the CPU client's
// pool, one thread per core by default): rows in nnz-balanced ranges, X^T u with one partial
// result per range summed at the end (see Parallel below). Small ones run on the calling
// thread, like scipy's CSR routines, which these follow.
//
// The module also exposes `registrations()` -> {target name: PyCapsule} for
// jax.ffi.register_ffi_target; svmopt/_csr.py loads it and falls back to XLA without it. And
// `build_csr(...)`, a plain function that builds the operator's arrays from a scipy CSR on the
// host in one pass (SparseOperator.from_scipy; numpy does it without the module).

#include "_ffi_module.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <vector>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

// X in CSR. The routines check what they index, with one predictable branch per row and
// per entry: a row whose pointers leave [0, nnz] or decrease, or an entry whose column is
// outside [0, d), is skipped and reported (return false) instead of reading or writing
// stray memory. from_scipy never builds such a matrix; a hand-built operator might.
template <typename T>
struct Csr {
  const T* __restrict data;
  const int32_t* __restrict idx;
  const int32_t* __restrict ptr;
  int64_t n, d, nnz;

  bool row(int64_t i, int32_t& p0, int32_t& p1) const {
    p0 = ptr[i];
    p1 = ptr[i + 1];
    return 0 <= p0 && p0 <= p1 && p1 <= nnz;
  }
  bool col(int32_t p, uint32_t& j) const {
    j = uint32_t(idx[p]);
    return j < uint64_t(d);
  }
};

// Splitting a product over XLA's intra-op pool. The calling thread claims ranges too, and
// waits only for ranges another thread has claimed and is running: a pool that never gets to
// our tasks (busy with other work, or absent) leaves the whole product to the caller, so the
// split cannot deadlock. A late task finds nothing left to claim and returns without touching
// the caller's (by then gone) data: it holds only the shared counters.
constexpr int64_t kNnzPerThread = 1 << 15;  // below this many entries per range, waking a thread costs more
constexpr int64_t kMaxRanges = 64;

struct Split {
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> left{0};
  int64_t ranges = 0;
  const void* body = nullptr;
  void (*call)(const void*, int64_t) = nullptr;
  std::mutex m;
  std::condition_variable cv;

  void work() {
    for (;;) {
      const int64_t r = next.fetch_add(1);
      if (r >= ranges) return;
      call(body, r);
      if (left.fetch_sub(1) == 1) {
        std::lock_guard<std::mutex> lock(m);
        cv.notify_all();
      }
    }
  }
};

// How many ranges a product over nnz entries gets on this pool (1: run it inline).
int64_t ranges_for(ffi::ThreadPool& pool, int64_t nnz) {
  const int64_t threads = std::max<int64_t>(pool.num_threads(), 1);
  return std::max<int64_t>(1, std::min({threads, kMaxRanges, nnz / kNnzPerThread}));
}

// body(r) for r in [0, ranges), spread over the pool and the calling thread.
template <typename F>
void for_ranges(ffi::ThreadPool& pool, int64_t ranges, const F& body) {
  if (ranges <= 1) {
    for (int64_t r = 0; r < ranges; ++r) body(r);
    return;
  }
  auto split = std::make_shared<Split>();
  split->ranges = ranges;
  split->left = ranges;
  split->body = &body;
  split->call = [](const void* f, int64_t r) { (*static_cast<const F*>(f))(r); };
  for (int64_t t = 1; t < ranges; ++t) pool.Schedule([split] { split->work(); });
  split->work();
  std::unique_lock<std::mutex> lock(split->m);
  split->cv.wait(lock, [&] { return split->left.load() == 0; });
}

// Row boundaries of `ranges` ranges holding about nnz / ranges entries each (monotone even
// for a malformed indptr: its rows are skipped and reported by the kernels).
template <typename T>
std::vector<int64_t> row_bounds(const Csr<T>& A, int64_t ranges) {
  std::vector<int64_t> b(ranges + 1, 0);
  b[ranges] = A.n;
  for (int64_t r = 1; r < ranges; ++r) {
    const int64_t target = A.nnz * r / ranges;
    const int64_t row = std::upper_bound(A.ptr, A.ptr + A.n + 1, int32_t(target)) - A.ptr - 1;
    b[r] = std::min(std::max(row, b[r - 1]), A.n);
  }
  return b;
}

// The rows [r0, r1) of A as a matrix of their own (indptr still indexes A's entries).
template <typename T>
Csr<T> rows_of(const Csr<T>& A, int64_t r0, int64_t r1) {
  return Csr<T>{A.data, A.idx, A.ptr + r0, r1 - r0, A.d, A.nnz};
}

// y[i, :] = sum_p data[p] x[idx[p], :], x stored (d, K), y (n, K); K known at compile time
// (KK = 0: K at run time, scipy's csr_matvecs).
template <typename T, int KK>
bool matvec_k(const Csr<T>& A, int64_t K_, const T* __restrict x, T* __restrict y) {
  const int64_t K = KK ? KK : K_;
  bool ok = true;
  for (int64_t i = 0; i < A.n; ++i) {
    T* yr = y + i * K;
    for (int64_t k = 0; k < K; ++k) yr[k] = 0;
    int32_t p0, p1;
    if (!A.row(i, p0, p1)) { ok = false; continue; }
    for (int32_t p = p0; p < p1; ++p) {
      uint32_t j;
      if (!A.col(p, j)) { ok = false; continue; }
      const T v = A.data[p];
      const T* xr = x + int64_t(j) * K;
      for (int64_t k = 0; k < K; ++k) yr[k] += v * xr[k];
    }
  }
  return ok;
}

// K = 1: four partial sums break the add latency chain of a long row.
template <typename T>
bool matvec_1(const Csr<T>& A, const T* __restrict x, T* __restrict y) {
  bool ok = true;
  for (int64_t i = 0; i < A.n; ++i) {
    T a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    int32_t p, end;
    if (!A.row(i, p, end)) { ok = false; y[i] = 0; continue; }
    for (; p + 4 <= end; p += 4) {
      uint32_t j0, j1, j2, j3;
      if (!(A.col(p, j0) & A.col(p + 1, j1) & A.col(p + 2, j2) & A.col(p + 3, j3))) break;  // checked one by one below
      a0 += A.data[p] * x[j0];
      a1 += A.data[p + 1] * x[j1];
      a2 += A.data[p + 2] * x[j2];
      a3 += A.data[p + 3] * x[j3];
    }
    for (; p < end; ++p) {
      uint32_t j;
      if (!A.col(p, j)) { ok = false; continue; }
      a0 += A.data[p] * x[j];
    }
    y[i] = (a0 + a1) + (a2 + a3);
  }
  return ok;
}

// z[idx[p], :] += data[p] u[i, :], u stored (n, K), z (d, K) zeroed by the caller. The row
// of u goes to a local array first: z cannot alias it, so the K-loop vectorizes.
template <typename T, int KK>
bool rmatvec_k(const Csr<T>& A, int64_t K_, const T* __restrict u, T* __restrict z) {
  const int64_t K = KK ? KK : K_;
  T local[KK ? KK : 1];
  bool ok = true;
  for (int64_t i = 0; i < A.n; ++i) {
    int32_t p0, p1;
    if (!A.row(i, p0, p1)) { ok = false; continue; }
    const T* ur = u + i * K;
    if constexpr (KK > 0) {
      for (int k = 0; k < KK; ++k) local[k] = ur[k];
      ur = local;
    }
    for (int32_t p = p0; p < p1; ++p) {
      uint32_t j;
      if (!A.col(p, j)) { ok = false; continue; }
      const T v = A.data[p];
      T* zr = z + int64_t(j) * K;
      for (int64_t k = 0; k < K; ++k) zr[k] += v * ur[k];
    }
  }
  return ok;
}

// Compile-time K for 1 <= K <= kMaxK (one-vs-rest batches), run-time K beyond.
constexpr int kMaxK = 32;

template <typename T, int K = 2>
bool matvec_fixed(const Csr<T>& A, int64_t k, const T* x, T* y) {
  if constexpr (K > kMaxK) {
    return matvec_k<T, 0>(A, k, x, y);
  } else {
    return k == K ? matvec_k<T, K>(A, k, x, y) : matvec_fixed<T, K + 1>(A, k, x, y);
  }
}

template <typename T>
bool matvec(const Csr<T>& A, int64_t k, const T* x, T* y) {
  return k == 1 ? matvec_1<T>(A, x, y) : matvec_fixed<T>(A, k, x, y);
}

template <typename T, int K = 1>
bool rmatvec(const Csr<T>& A, int64_t k, const T* u, T* z) {
  if constexpr (K > kMaxK) {
    return rmatvec_k<T, 0>(A, k, u, z);
  } else {
    return k == K ? rmatvec_k<T, K>(A, k, u, z) : rmatvec<T, K + 1>(A, k, u, z);
  }
}

// z = X^T (D (X v + c)) and s = sum_i D_i (x_i . v + c): newton's Hessian product in one walk
// over the rows, each row's entries read once for both halves (still in cache for the second),
// and the rows with D_i = 0 skipped whole (LIBLINEAR's index set I). z zeroed by the caller.
template <typename T>
bool hvp_rows(const Csr<T>& A, const T* __restrict v, const T* __restrict D, T c, T* __restrict z, T& s) {
  bool ok = true;
  T acc = 0;
  for (int64_t i = 0; i < A.n; ++i) {
    const T di = D[i];
    if (di == 0) continue;
    int32_t p0, p1;
    if (!A.row(i, p0, p1)) { ok = false; continue; }
    T a0 = 0, a1 = 0;
    bool row_ok = true;
    int32_t p = p0;
    for (; p + 2 <= p1; p += 2) {
      uint32_t j0, j1;
      if (!(A.col(p, j0) & A.col(p + 1, j1))) { row_ok = false; break; }
      a0 += A.data[p] * v[j0];
      a1 += A.data[p + 1] * v[j1];
    }
    for (; row_ok && p < p1; ++p) {
      uint32_t j;
      if (!A.col(p, j)) { row_ok = false; break; }
      a0 += A.data[p] * v[j];
    }
    if (!row_ok) { ok = false; continue; }  // a bad column: the row is left out of both halves
    const T t = di * ((a0 + a1) + c);
    acc += t;
    for (int32_t q = p0; q < p1; ++q) z[uint32_t(A.idx[q])] += t * A.data[q];
  }
  s = acc;
  return ok;
}

// Operand (K, m_in) and result (K, m_out) against an n x d CSR matrix with nnz entries.
ffi::Error check(ffi::Span<const int64_t> in, ffi::Span<const int64_t> out, int64_t m_in, int64_t m_out,
                 int64_t nnz, int64_t nidx, int64_t nrid) {
  if (nidx != nnz || nrid != nnz) return ffi::Error::InvalidArgument("svmopt csr: data/indices/row_ids lengths differ");
  if (in.size() != 2 || out.size() != 2 || in[0] != out[0] || in[1] != m_in || out[1] != m_out)
    return ffi::Error::InvalidArgument("svmopt csr: operand/result shapes do not match the matrix");
  return ffi::Error::Success();
}

const char kMalformed[] =
    "svmopt csr: malformed matrix (a column index outside [0, d), or indptr decreasing or outside [0, nnz]); "
    "those entries were skipped";

template <ffi::DataType DT>
ffi::Error Matvec(ffi::Buffer<DT> data, ffi::Buffer<ffi::S32> indices, ffi::Buffer<ffi::S32> indptr,
                  ffi::Buffer<ffi::S32> row_ids, ffi::Buffer<DT> x, ffi::ResultBuffer<DT> y, ffi::ThreadPool pool) {
  using T = ffi::NativeType<DT>;
  const int64_t n = indptr.element_count() - 1, nnz = data.element_count();
  const auto xd = x.dimensions();
  const int64_t d = xd.size() == 2 ? xd[1] : -1;
  if (auto e = check(xd, y->dimensions(), d, n, nnz, indices.element_count(), row_ids.element_count()); e.failure())
    return e;
  const Csr<T> A{data.typed_data(), indices.typed_data(), indptr.typed_data(), n, d, nnz};
  const int64_t K = xd[0], ranges = ranges_for(pool, nnz * K);
  const std::vector<int64_t> b = row_bounds(A, ranges);
  std::atomic<bool> ok{true};
  // each range writes its own rows of y
  for_ranges(pool, ranges, [&](int64_t r) {
    if (!matvec<T>(rows_of(A, b[r], b[r + 1]), K, x.typed_data(), y->typed_data() + b[r] * K)) ok = false;
  });
  if (!ok) return ffi::Error::InvalidArgument(kMalformed);
  return ffi::Error::Success();
}

template <ffi::DataType DT>
ffi::Error Rmatvec(ffi::Buffer<DT> data, ffi::Buffer<ffi::S32> indices, ffi::Buffer<ffi::S32> indptr,
                   ffi::Buffer<ffi::S32> row_ids, ffi::Buffer<DT> u, ffi::ResultBuffer<DT> z, ffi::ThreadPool pool) {
  using T = ffi::NativeType<DT>;
  const int64_t n = indptr.element_count() - 1, nnz = data.element_count();
  const auto zd = z->dimensions();
  const int64_t d = zd.size() == 2 ? zd[1] : -1;
  if (auto e = check(u.dimensions(), zd, n, d, nnz, indices.element_count(), row_ids.element_count()); e.failure())
    return e;
  T* out = z->typed_data();
  const int64_t K = zd[0], m = d * K;
  const Csr<T> A{data.typed_data(), indices.typed_data(), indptr.typed_data(), n, d, nnz};
  // one partial z per range past the first, summed into z at the end: split only when the
  // partials (zeroing and summing them) cost well under the product
  int64_t ranges = ranges_for(pool, nnz * K);
  while (ranges > 1 && (ranges - 1) * m * 4 > nnz * K) --ranges;
  std::unique_ptr<T[]> part(ranges > 1 ? new T[(ranges - 1) * m]() : nullptr);
  for (int64_t j = 0; j < m; ++j) out[j] = 0;
  const std::vector<int64_t> b = row_bounds(A, ranges);
  std::atomic<bool> ok{true};
  for_ranges(pool, ranges, [&](int64_t r) {
    T* dst = r == 0 ? out : part.get() + (r - 1) * m;
    if (!rmatvec<T>(rows_of(A, b[r], b[r + 1]), K, u.typed_data() + b[r] * K, dst)) ok = false;
  });
  for (int64_t r = 1; r < ranges; ++r) {
    const T* src = part.get() + (r - 1) * m;
    for (int64_t j = 0; j < m; ++j) out[j] += src[j];
  }
  if (!ok) return ffi::Error::InvalidArgument(kMalformed);
  return ffi::Error::Success();
}

template <ffi::DataType DT>
ffi::Error Hvp(ffi::Buffer<DT> data, ffi::Buffer<ffi::S32> indices, ffi::Buffer<ffi::S32> indptr,
               ffi::Buffer<ffi::S32> row_ids, ffi::Buffer<DT> v, ffi::Buffer<DT> D, ffi::Buffer<DT> c,
               ffi::ResultBuffer<DT> z, ffi::ResultBuffer<DT> s, ffi::ThreadPool pool) {
  using T = ffi::NativeType<DT>;
  const int64_t n = indptr.element_count() - 1, nnz = data.element_count();
  const int64_t d = v.element_count();
  if (int64_t(indices.element_count()) != nnz || int64_t(row_ids.element_count()) != nnz)
    return ffi::Error::InvalidArgument("svmopt csr: data/indices/row_ids lengths differ");
  if (int64_t(D.element_count()) != n || int64_t(z->element_count()) != d || c.element_count() != 1 ||
      s->element_count() != 1)
    return ffi::Error::InvalidArgument("svmopt csr hvp: operand/result shapes do not match the matrix");
  const Csr<T> A{data.typed_data(), indices.typed_data(), indptr.typed_data(), n, d, nnz};
  T* out = z->typed_data();
  int64_t ranges = ranges_for(pool, nnz);
  while (ranges > 1 && (ranges - 1) * d * 4 > nnz) --ranges;
  std::unique_ptr<T[]> part(ranges > 1 ? new T[(ranges - 1) * d]() : nullptr);
  std::vector<T> sums(ranges, T(0));
  for (int64_t j = 0; j < d; ++j) out[j] = 0;
  const std::vector<int64_t> b = row_bounds(A, ranges);
  const T cc = c.typed_data()[0];
  std::atomic<bool> ok{true};
  for_ranges(pool, ranges, [&](int64_t r) {
    T* dst = r == 0 ? out : part.get() + (r - 1) * d;
    if (!hvp_rows<T>(rows_of(A, b[r], b[r + 1]), v.typed_data(), D.typed_data() + b[r], cc, dst, sums[r])) ok = false;
  });
  T total = sums[0];
  for (int64_t r = 1; r < ranges; ++r) {
    const T* src = part.get() + (r - 1) * d;
    for (int64_t j = 0; j < d; ++j) out[j] += src[j];
    total += sums[r];
  }
  s->typed_data()[0] = total;
  if (!ok) return ffi::Error::InvalidArgument(kMalformed);
  return ffi::Error::Success();
}

// The rows with keep[i] set first, in their order, then the others (newton's CG walks only the
// first ones: LIBLINEAR's index set I). Row r of the result is row perm[r] of X; its entries are
// entries src[p] of X, with column indices_out[p] and row id rows[p] = r; indptr_out ends every
// row after the kept ones at the kept rows' last entry, so a walk along it reads only those.
// One pass over the rows and one over the entries (XLA's cumsum / repeat took 7 ms on a9a).
ffi::Error KeepRows(ffi::Buffer<ffi::S32> indptr, ffi::Buffer<ffi::S32> indices, ffi::Buffer<ffi::PRED> keep,
                    ffi::ResultBuffer<ffi::S32> perm, ffi::ResultBuffer<ffi::S32> indptr_out,
                    ffi::ResultBuffer<ffi::S32> indices_out, ffi::ResultBuffer<ffi::S32> rows,
                    ffi::ResultBuffer<ffi::S32> src) {
  const int64_t n = keep.element_count(), nnz = indices.element_count();
  auto size = [](const auto& b) { return static_cast<int64_t>(b.element_count()); };
  if (size(indptr) != n + 1 || size(*perm) != n || size(*indptr_out) != n + 1 || size(*indices_out) != nnz ||
      size(*rows) != nnz || size(*src) != nnz)
    return ffi::Error::InvalidArgument("svmopt csr keep_rows: operand sizes do not fit one CSR matrix");
  const int32_t* ip = indptr.typed_data();
  const bool* kp = keep.typed_data();
  if (ip[0] != 0 || ip[n] != nnz)
    return ffi::Error::InvalidArgument("svmopt csr keep_rows: indptr must run from 0 to the number of entries");
  for (int64_t i = 0; i < n; ++i)
    if (ip[i + 1] < ip[i]) return ffi::Error::InvalidArgument("svmopt csr keep_rows: indptr decreases");
  int32_t* pm = perm->typed_data();
  int64_t k = 0, kept = 0;
  for (int64_t i = 0; i < n; ++i)
    if (kp[i]) {
      pm[k++] = static_cast<int32_t>(i);
      kept += ip[i + 1] - ip[i];
    }
  for (int64_t i = 0, j = k; i < n; ++i)
    if (!kp[i]) pm[j++] = static_cast<int32_t>(i);
  const int32_t* idx = indices.typed_data();
  int32_t *ipo = indptr_out->typed_data(), *ido = indices_out->typed_data(), *ro = rows->typed_data(),
          *so = src->typed_data();
  int64_t p = 0;
  ipo[0] = 0;
  for (int64_t r = 0; r < n; ++r) {
    for (int32_t q = ip[pm[r]]; q < ip[pm[r] + 1]; ++q, ++p) {
      so[p] = q;
      ido[p] = idx[q];
      ro[p] = static_cast<int32_t>(r);
    }
    ipo[r + 1] = static_cast<int32_t>(std::min(p, kept));
  }
  return ffi::Error::Success();
}


// ---- building the operator's arrays on the host (a module function, not a custom call) ----
//
// build_csr(indptr, indices, data, data_f64, out_data, out_f64, out_indices, out_rows, out_indptr,
//           d, bias, has_bias, pad_rows, pad_nnz) -> code
//
// One pass from a scipy CSR (indptr int64 (n + 1), indices int32, data float32 / float64) to the
// operator's arrays (out_data float32 / float64, int32 indices, row ids and indptr) of a matrix of
// n_out >= n rows (the rows past n empty): in each row, first the padding's explicit zeros (column 0;
// pad_nnz of them spread over the last pad_rows rows, one more each in the first pad_nnz % pad_rows
// of those), then the row's entries, then the bias feature (column d, value bias) when has_bias.
// That is what scipy's vstack, a column append and a copy did in three passes (9 ms on a9a).
// Returns 0, or without finishing: 1 when a row's columns are not strictly increasing (unsorted
// or duplicated: the caller canonicalises and calls again), 2 when a column is outside [0, d) or
// indptr is malformed, 3 when the output sizes do not fit, 4 at a value that is NaN, infinite or
// beyond the output type's range (the caller names its row: this replaces a separate pass).
template <typename TI, typename TO>
int build(const int64_t* ip, int64_t n, const int32_t* ix, int64_t nnz_in, const TI* x, TO* od, int32_t* oi,
          int32_t* orow, int32_t* op, int64_t n_out, int64_t nnz_out, int64_t d, double bias, bool has_bias,
          int64_t m, int64_t E) {
  const int64_t first_pad = n_out - m;
  const double limit = static_cast<double>(std::numeric_limits<TO>::max());
  int64_t p = 0;
  op[0] = 0;
  for (int64_t r = 0; r < n_out; ++r) {
    const int32_t row = static_cast<int32_t>(r);
    if (r >= first_pad && m > 0) {
      const int64_t a = E / m + ((r - first_pad) < E % m ? 1 : 0);
      if (p + a > nnz_out) return 3;
      for (int64_t k = 0; k < a; ++k, ++p) {
        od[p] = TO(0);
        oi[p] = 0;
        orow[p] = row;
      }
    }
    if (r < n) {
      const int64_t s = ip[r], e = ip[r + 1];
      if (s < 0 || e < s || e > nnz_in) return 2;
      if (p + (e - s) > nnz_out) return 3;
      int64_t prev = -1;
      for (int64_t q = s; q < e; ++q, ++p) {
        const int32_t c = ix[q];
        if (c < 0 || c >= d) return 2;
        if (c <= prev) return 1;
        prev = c;
        if (!(std::fabs(static_cast<double>(x[q])) <= limit)) return 4;  // (NaN fails every comparison)
        od[p] = static_cast<TO>(x[q]);
        oi[p] = c;
        orow[p] = row;
      }
    }
    if (has_bias) {
      if (p + 1 > nnz_out) return 3;
      od[p] = static_cast<TO>(bias);
      oi[p] = static_cast<int32_t>(d);
      orow[p] = row;
      ++p;
    }
    if (p > INT32_MAX) return 3;
    op[r + 1] = static_cast<int32_t>(p);
  }
  return p == nnz_out ? 0 : 3;
}

PyObject* build_csr(PyObject*, PyObject* args) {
  Py_buffer ip, ix, x, od, oi, orow, op;
  int in64, out64, has_bias;
  long long d, m, E;
  double bias;
  if (!PyArg_ParseTuple(args, "y*y*y*py*py*y*y*LdpLL", &ip, &ix, &x, &in64, &od, &out64, &oi, &orow, &op, &d,
                        &bias, &has_bias, &m, &E))
    return nullptr;
  Py_buffer* all[] = {&ip, &ix, &x, &od, &oi, &orow, &op};
  const int64_t n = ip.len / 8 - 1, nnz_in = ix.len / 4, n_out = op.len / 4 - 1, nnz_out = oi.len / 4;
  int code = 3;
  const bool sizes = n >= 0 && n_out >= n && x.len == nnz_in * (in64 ? 8 : 4) && od.len == nnz_out * (out64 ? 8 : 4) &&
                     orow.len == oi.len && m >= 0 && m <= n_out && E >= 0 && !od.readonly && !oi.readonly &&
                     !orow.readonly && !op.readonly;
  if (sizes) {
    Py_BEGIN_ALLOW_THREADS
    const auto* pi = static_cast<const int64_t*>(ip.buf);
    const auto* pix = static_cast<const int32_t*>(ix.buf);
    auto* poi = static_cast<int32_t*>(oi.buf);
    auto* por = static_cast<int32_t*>(orow.buf);
    auto* pop = static_cast<int32_t*>(op.buf);
    if (in64 && out64)
      code = build(pi, n, pix, nnz_in, static_cast<const double*>(x.buf), static_cast<double*>(od.buf), poi, por, pop,
                   n_out, nnz_out, d, bias, has_bias, m, E);
    else if (in64)
      code = build(pi, n, pix, nnz_in, static_cast<const double*>(x.buf), static_cast<float*>(od.buf), poi, por, pop,
                   n_out, nnz_out, d, bias, has_bias, m, E);
    else if (out64)
      code = build(pi, n, pix, nnz_in, static_cast<const float*>(x.buf), static_cast<double*>(od.buf), poi, por, pop,
                   n_out, nnz_out, d, bias, has_bias, m, E);
    else
      code = build(pi, n, pix, nnz_in, static_cast<const float*>(x.buf), static_cast<float*>(od.buf), poi, por, pop,
                   n_out, nnz_out, d, bias, has_bias, m, E);
    Py_END_ALLOW_THREADS
  }
  for (Py_buffer* b : all) PyBuffer_Release(b);
  return PyLong_FromLong(code);
}

}  // namespace

#define SVMOPT_CSR_BUILD_METHOD \
  { "build_csr", build_csr, METH_VARARGS, "The operator's CSR arrays in one pass (see svmopt/_csr_ffi.cc)." }

// The matrix's operands: data, indices, indptr, row_ids.
#define SVMOPT_CSR_MATRIX(DT)         \
  ffi::Ffi::Bind()                    \
      .Arg<ffi::Buffer<DT>>()         \
      .Arg<ffi::Buffer<ffi::S32>>()   \
      .Arg<ffi::Buffer<ffi::S32>>()   \
      .Arg<ffi::Buffer<ffi::S32>>()

// Then x (or u); result: y (or z).
#define SVMOPT_CSR_BINDING(DT) SVMOPT_CSR_MATRIX(DT).Arg<ffi::Buffer<DT>>().Ret<ffi::Buffer<DT>>().Ctx<ffi::ThreadPool>()

XLA_FFI_DEFINE_HANDLER_SYMBOL(svmopt_csr_matvec_f32, Matvec<ffi::F32>, SVMOPT_CSR_BINDING(ffi::F32));
XLA_FFI_DEFINE_HANDLER_SYMBOL(svmopt_csr_matvec_f64, Matvec<ffi::F64>, SVMOPT_CSR_BINDING(ffi::F64));
XLA_FFI_DEFINE_HANDLER_SYMBOL(svmopt_csr_rmatvec_f32, Rmatvec<ffi::F32>, SVMOPT_CSR_BINDING(ffi::F32));
XLA_FFI_DEFINE_HANDLER_SYMBOL(svmopt_csr_rmatvec_f64, Rmatvec<ffi::F64>, SVMOPT_CSR_BINDING(ffi::F64));

// Then v, D, c; results: X^T (D (X v + c)), its sum.
#define SVMOPT_CSR_HVP_BINDING(DT)                                                                 \
  SVMOPT_CSR_MATRIX(DT)                                                                            \
      .Arg<ffi::Buffer<DT>>()                                                                      \
      .Arg<ffi::Buffer<DT>>()                                                                      \
      .Arg<ffi::Buffer<DT>>()                                                                      \
      .Ret<ffi::Buffer<DT>>()                                                                      \
      .Ret<ffi::Buffer<DT>>()                                                                      \
      .Ctx<ffi::ThreadPool>()

XLA_FFI_DEFINE_HANDLER_SYMBOL(svmopt_csr_hvp_f32, Hvp<ffi::F32>, SVMOPT_CSR_HVP_BINDING(ffi::F32));
XLA_FFI_DEFINE_HANDLER_SYMBOL(svmopt_csr_hvp_f64, Hvp<ffi::F64>, SVMOPT_CSR_HVP_BINDING(ffi::F64));

XLA_FFI_DEFINE_HANDLER_SYMBOL(svmopt_csr_keep_rows, KeepRows,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Arg<ffi::Buffer<ffi::PRED>>()
                                  .Ret<ffi::Buffer<ffi::S32>>()
                                  .Ret<ffi::Buffer<ffi::S32>>()
                                  .Ret<ffi::Buffer<ffi::S32>>()
                                  .Ret<ffi::Buffer<ffi::S32>>()
                                  .Ret<ffi::Buffer<ffi::S32>>());

SVMOPT_FFI_MODULE_WITH(_csr_ffi, "svmopt CSR kernels (XLA FFI).", SVMOPT_CSR_BUILD_METHOD,
                  SVMOPT_FFI_TARGET(svmopt_csr_matvec_f32),
                  SVMOPT_FFI_TARGET(svmopt_csr_matvec_f64),
                  SVMOPT_FFI_TARGET(svmopt_csr_rmatvec_f32),
                  SVMOPT_FFI_TARGET(svmopt_csr_rmatvec_f64),
                  SVMOPT_FFI_TARGET(svmopt_csr_hvp_f32),
                  SVMOPT_FFI_TARGET(svmopt_csr_hvp_f64),
                  SVMOPT_FFI_TARGET(svmopt_csr_keep_rows))
