// CSR sparse-times-dense products for the CPU backend, as XLA FFI custom calls.
//
//   svmopt_csr_matvec_{f32,f64}   (data, indices, indptr, row_ids, x)  ->  y = x X^T
//   svmopt_csr_rmatvec_{f32,f64}  (data, indices, indptr, row_ids, u)  ->  z = u X
//
// X is n x d in CSR (int32 indices/indptr); x is (K, d), y (K, n), u (K, n), z (K, d),
// all with K as the minor (fastest) dimension, so a row of K values is contiguous: the
// Python side asks XLA for that layout. K = 1 is the plain X w / X^T u. row_ids is not
// read here (the pure-XLA path uses it); it is an operand so both lowerings share one
// primitive. Single-threaded, like scipy's CSR routines, which these follow.
//
// The module also exposes `registrations()` -> {target name: PyCapsule} for
// jax.ffi.register_ffi_target; svmopt/_csr.py loads it and falls back to XLA without it.

#include "_ffi_module.h"

#include <cstdint>

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
                  ffi::Buffer<ffi::S32> row_ids, ffi::Buffer<DT> x, ffi::ResultBuffer<DT> y) {
  using T = ffi::NativeType<DT>;
  const int64_t n = indptr.element_count() - 1, nnz = data.element_count();
  const auto xd = x.dimensions();
  const int64_t d = xd.size() == 2 ? xd[1] : -1;
  if (auto e = check(xd, y->dimensions(), d, n, nnz, indices.element_count(), row_ids.element_count()); e.failure())
    return e;
  const Csr<T> A{data.typed_data(), indices.typed_data(), indptr.typed_data(), n, d, nnz};
  if (!matvec<T>(A, xd[0], x.typed_data(), y->typed_data())) return ffi::Error::InvalidArgument(kMalformed);
  return ffi::Error::Success();
}

template <ffi::DataType DT>
ffi::Error Rmatvec(ffi::Buffer<DT> data, ffi::Buffer<ffi::S32> indices, ffi::Buffer<ffi::S32> indptr,
                   ffi::Buffer<ffi::S32> row_ids, ffi::Buffer<DT> u, ffi::ResultBuffer<DT> z) {
  using T = ffi::NativeType<DT>;
  const int64_t n = indptr.element_count() - 1, nnz = data.element_count();
  const auto zd = z->dimensions();
  const int64_t d = zd.size() == 2 ? zd[1] : -1;
  if (auto e = check(u.dimensions(), zd, n, d, nnz, indices.element_count(), row_ids.element_count()); e.failure())
    return e;
  T* out = z->typed_data();
  for (int64_t j = 0; j < d * zd[0]; ++j) out[j] = 0;
  const Csr<T> A{data.typed_data(), indices.typed_data(), indptr.typed_data(), n, d, nnz};
  if (!rmatvec<T>(A, zd[0], u.typed_data(), out)) return ffi::Error::InvalidArgument(kMalformed);
  return ffi::Error::Success();
}

}  // namespace

// Operands: data, indices, indptr, row_ids, x (or u); result: y (or z).
#define SVMOPT_CSR_BINDING(DT)        \
  ffi::Ffi::Bind()                    \
      .Arg<ffi::Buffer<DT>>()         \
      .Arg<ffi::Buffer<ffi::S32>>()   \
      .Arg<ffi::Buffer<ffi::S32>>()   \
      .Arg<ffi::Buffer<ffi::S32>>()   \
      .Arg<ffi::Buffer<DT>>()         \
      .Ret<ffi::Buffer<DT>>()

XLA_FFI_DEFINE_HANDLER_SYMBOL(svmopt_csr_matvec_f32, Matvec<ffi::F32>, SVMOPT_CSR_BINDING(ffi::F32));
XLA_FFI_DEFINE_HANDLER_SYMBOL(svmopt_csr_matvec_f64, Matvec<ffi::F64>, SVMOPT_CSR_BINDING(ffi::F64));
XLA_FFI_DEFINE_HANDLER_SYMBOL(svmopt_csr_rmatvec_f32, Rmatvec<ffi::F32>, SVMOPT_CSR_BINDING(ffi::F32));
XLA_FFI_DEFINE_HANDLER_SYMBOL(svmopt_csr_rmatvec_f64, Rmatvec<ffi::F64>, SVMOPT_CSR_BINDING(ffi::F64));

SVMOPT_FFI_MODULE(_csr_ffi, "svmopt CSR kernels (XLA FFI).",
                  SVMOPT_FFI_TARGET(svmopt_csr_matvec_f32),
                  SVMOPT_FFI_TARGET(svmopt_csr_matvec_f64),
                  SVMOPT_FFI_TARGET(svmopt_csr_rmatvec_f32),
                  SVMOPT_FFI_TARGET(svmopt_csr_rmatvec_f64))
