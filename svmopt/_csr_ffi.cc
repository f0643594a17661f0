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

#include <Python.h>

#include <cstdint>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

// Every routine checks each column index against d (one predictable branch per entry):
// an out-of-range index is skipped and reported instead of reading or writing out of
// bounds. Row pointers are checked once per call (valid_rows).

// y[i, :] = sum_p data[p] x[indices[p], :] with x stored (d, K); K known at compile time.
template <typename T, int K>
bool matvec_k(const T* data, const int32_t* idx, const int32_t* ptr, int64_t n, int64_t d, const T* x, T* y) {
  bool ok = true;
  for (int64_t i = 0; i < n; ++i) {
    T* yr = y + i * K;
    for (int k = 0; k < K; ++k) yr[k] = 0;
    for (int32_t p = ptr[i]; p < ptr[i + 1]; ++p) {
      const uint32_t j = uint32_t(idx[p]);
      if (j >= uint64_t(d)) { ok = false; continue; }
      const T v = data[p];
      const T* xr = x + int64_t(j) * K;
      for (int k = 0; k < K; ++k) yr[k] += v * xr[k];
    }
  }
  return ok;
}

// Any K (scipy's csr_matvecs).
template <typename T>
bool matvec_any(const T* data, const int32_t* idx, const int32_t* ptr, int64_t n, int64_t d, int64_t K, const T* x,
                T* y) {
  bool ok = true;
  for (int64_t i = 0; i < n; ++i) {
    T* yr = y + i * K;
    for (int64_t k = 0; k < K; ++k) yr[k] = 0;
    for (int32_t p = ptr[i]; p < ptr[i + 1]; ++p) {
      const uint32_t j = uint32_t(idx[p]);
      if (j >= uint64_t(d)) { ok = false; continue; }
      const T v = data[p];
      const T* xr = x + int64_t(j) * K;
      for (int64_t k = 0; k < K; ++k) yr[k] += v * xr[k];
    }
  }
  return ok;
}

// K = 1: four partial sums break the add latency chain of a long row.
template <typename T>
bool matvec_1(const T* __restrict data, const int32_t* __restrict idx, const int32_t* __restrict ptr, int64_t n,
              int64_t d, const T* __restrict x, T* __restrict y) {
  bool ok = true;
  const uint64_t dd = uint64_t(d);
  for (int64_t i = 0; i < n; ++i) {
    T a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    int32_t p = ptr[i];
    const int32_t end = ptr[i + 1];
    for (; p + 4 <= end; p += 4) {
      const uint32_t j0 = uint32_t(idx[p]), j1 = uint32_t(idx[p + 1]), j2 = uint32_t(idx[p + 2]),
                     j3 = uint32_t(idx[p + 3]);
      if ((j0 >= dd) | (j1 >= dd) | (j2 >= dd) | (j3 >= dd)) { ok = false; break; }
      a0 += data[p] * x[j0];
      a1 += data[p + 1] * x[j1];
      a2 += data[p + 2] * x[j2];
      a3 += data[p + 3] * x[j3];
    }
    for (; p < end; ++p) {
      const uint32_t j = uint32_t(idx[p]);
      if (j >= dd) { ok = false; continue; }
      a0 += data[p] * x[j];
    }
    y[i] = (a0 + a1) + (a2 + a3);
  }
  return ok;
}

// z[indices[p], :] += data[p] u[i, :]; z (d, K) zeroed by the caller.
template <typename T, int K>
bool rmatvec_k(const T* __restrict data, const int32_t* __restrict idx, const int32_t* __restrict ptr, int64_t n,
               int64_t d, const T* __restrict u, T* __restrict z) {
  bool ok = true;
  for (int64_t i = 0; i < n; ++i) {
    T ur[K];
    for (int k = 0; k < K; ++k) ur[k] = u[i * K + k];
    for (int32_t p = ptr[i]; p < ptr[i + 1]; ++p) {
      const uint32_t j = uint32_t(idx[p]);
      if (j >= uint64_t(d)) { ok = false; continue; }
      const T v = data[p];
      T* zr = z + int64_t(j) * K;
      for (int k = 0; k < K; ++k) zr[k] += v * ur[k];
    }
  }
  return ok;
}

template <typename T>
bool rmatvec_any(const T* data, const int32_t* idx, const int32_t* ptr, int64_t n, int64_t d, int64_t K, const T* u,
                 T* z) {
  bool ok = true;
  for (int64_t i = 0; i < n; ++i) {
    const T* ur = u + i * K;
    for (int32_t p = ptr[i]; p < ptr[i + 1]; ++p) {
      const uint32_t j = uint32_t(idx[p]);
      if (j >= uint64_t(d)) { ok = false; continue; }
      const T v = data[p];
      T* zr = z + int64_t(j) * K;
      for (int64_t k = 0; k < K; ++k) zr[k] += v * ur[k];
    }
  }
  return ok;
}

template <typename T>
bool rmatvec_1(const T* __restrict data, const int32_t* __restrict idx, const int32_t* __restrict ptr, int64_t n,
               int64_t d, const T* __restrict u, T* __restrict z) {
  bool ok = true;
  for (int64_t i = 0; i < n; ++i) {
    const T ui = u[i];
    for (int32_t p = ptr[i]; p < ptr[i + 1]; ++p) {
      const uint32_t j = uint32_t(idx[p]);
      if (j >= uint64_t(d)) { ok = false; continue; }
      z[j] += data[p] * ui;
    }
  }
  return ok;
}

// Compile-time K for 2 <= K <= kMaxK (one-vs-rest batches); a loop over K beyond.
constexpr int kMaxK = 32;

template <typename T, int K = 2>
bool matvec_dispatch(const T* data, const int32_t* idx, const int32_t* ptr, int64_t n, int64_t d, int64_t k,
                     const T* x, T* y) {
  if constexpr (K > kMaxK) {
    return matvec_any(data, idx, ptr, n, d, k, x, y);
  } else {
    if (k == K) return matvec_k<T, K>(data, idx, ptr, n, d, x, y);
    return matvec_dispatch<T, K + 1>(data, idx, ptr, n, d, k, x, y);
  }
}

template <typename T, int K = 2>
bool rmatvec_dispatch(const T* data, const int32_t* idx, const int32_t* ptr, int64_t n, int64_t d, int64_t k,
                      const T* u, T* z) {
  if constexpr (K > kMaxK) {
    return rmatvec_any(data, idx, ptr, n, d, k, u, z);
  } else {
    if (k == K) return rmatvec_k<T, K>(data, idx, ptr, n, d, u, z);
    return rmatvec_dispatch<T, K + 1>(data, idx, ptr, n, d, k, u, z);
  }
}

// indptr starts at 0, never decreases and ends within the nnz stored entries.
bool valid_rows(const int32_t* ptr, int64_t n, int64_t nnz) {
  if (ptr[0] != 0 || ptr[n] > nnz) return false;
  for (int64_t i = 0; i < n; ++i)
    if (ptr[i + 1] < ptr[i]) return false;
  return true;
}

const char kBadIndex[] = "svmopt csr: a column index is outside [0, d); its entries were skipped";
const char kBadRows[] = "svmopt csr: indptr must start at 0, not decrease and end within the stored entries";

// Operand (K, m_in) and result (K, m_out) against an n x d CSR matrix with nnz entries.
ffi::Error check(ffi::Span<const int64_t> in, ffi::Span<const int64_t> out, int64_t m_in, int64_t m_out,
                 int64_t nnz, int64_t nidx, int64_t nrid) {
  if (nidx != nnz || nrid != nnz) return ffi::Error::InvalidArgument("svmopt csr: data/indices/row_ids lengths differ");
  if (in.size() != 2 || out.size() != 2 || in[0] != out[0] || in[1] != m_in || out[1] != m_out)
    return ffi::Error::InvalidArgument("svmopt csr: operand/result shapes do not match the matrix");
  return ffi::Error::Success();
}

template <ffi::DataType DT>
ffi::Error Matvec(ffi::Buffer<DT> data, ffi::Buffer<ffi::S32> indices, ffi::Buffer<ffi::S32> indptr,
                  ffi::Buffer<ffi::S32> row_ids, ffi::Buffer<DT> x, ffi::ResultBuffer<DT> y) {
  using T = ffi::NativeType<DT>;
  const int64_t n = indptr.element_count() - 1;
  const auto xd = x.dimensions();
  const int64_t d = xd.size() == 2 ? xd[1] : -1;
  if (auto e = check(xd, y->dimensions(), d, n, data.element_count(), indices.element_count(),
                     row_ids.element_count());
      e.failure())
    return e;
  if (!valid_rows(indptr.typed_data(), n, data.element_count())) return ffi::Error::InvalidArgument(kBadRows);
  const int64_t K = xd[0];
  const bool ok = K == 1 ? matvec_1<T>(data.typed_data(), indices.typed_data(), indptr.typed_data(), n, d,
                                       x.typed_data(), y->typed_data())
                         : matvec_dispatch<T>(data.typed_data(), indices.typed_data(), indptr.typed_data(), n, d, K,
                                              x.typed_data(), y->typed_data());
  return ok ? ffi::Error::Success() : ffi::Error::InvalidArgument(kBadIndex);
}

template <ffi::DataType DT>
ffi::Error Rmatvec(ffi::Buffer<DT> data, ffi::Buffer<ffi::S32> indices, ffi::Buffer<ffi::S32> indptr,
                   ffi::Buffer<ffi::S32> row_ids, ffi::Buffer<DT> u, ffi::ResultBuffer<DT> z) {
  using T = ffi::NativeType<DT>;
  const int64_t n = indptr.element_count() - 1;
  const auto zd = z->dimensions();
  const int64_t d = zd.size() == 2 ? zd[1] : -1;
  if (auto e = check(u.dimensions(), zd, n, d, data.element_count(), indices.element_count(),
                     row_ids.element_count());
      e.failure())
    return e;
  if (!valid_rows(indptr.typed_data(), n, data.element_count())) return ffi::Error::InvalidArgument(kBadRows);
  const int64_t K = zd[0];
  T* out = z->typed_data();
  for (int64_t j = 0; j < d * K; ++j) out[j] = 0;
  const bool ok = K == 1 ? rmatvec_1<T>(data.typed_data(), indices.typed_data(), indptr.typed_data(), n, d,
                                        u.typed_data(), out)
                         : rmatvec_dispatch<T>(data.typed_data(), indices.typed_data(), indptr.typed_data(), n, d, K,
                                               u.typed_data(), out);
  return ok ? ffi::Error::Success() : ffi::Error::InvalidArgument(kBadIndex);
}

}  // namespace

#define SVMOPT_CSR_BINDING(DT)                \
  ffi::Ffi::Bind()                            \
      .Arg<ffi::Buffer<DT>>()         /* data */    \
      .Arg<ffi::Buffer<ffi::S32>>()   /* indices */ \
      .Arg<ffi::Buffer<ffi::S32>>()   /* indptr */  \
      .Arg<ffi::Buffer<ffi::S32>>()   /* row_ids */ \
      .Arg<ffi::Buffer<DT>>()         /* x or u */  \
      .Ret<ffi::Buffer<DT>>()

XLA_FFI_DEFINE_HANDLER_SYMBOL(svmopt_csr_matvec_f32, Matvec<ffi::F32>, SVMOPT_CSR_BINDING(ffi::F32));
XLA_FFI_DEFINE_HANDLER_SYMBOL(svmopt_csr_matvec_f64, Matvec<ffi::F64>, SVMOPT_CSR_BINDING(ffi::F64));
XLA_FFI_DEFINE_HANDLER_SYMBOL(svmopt_csr_rmatvec_f32, Rmatvec<ffi::F32>, SVMOPT_CSR_BINDING(ffi::F32));
XLA_FFI_DEFINE_HANDLER_SYMBOL(svmopt_csr_rmatvec_f64, Rmatvec<ffi::F64>, SVMOPT_CSR_BINDING(ffi::F64));

// ---- Python module: the handlers as capsules -------------------------------------------

static PyObject* registrations(PyObject*, PyObject*) {
  PyObject* out = PyDict_New();
  if (!out) return nullptr;
  const struct {
    const char* name;
    void* fn;
  } targets[] = {
      {"svmopt_csr_matvec_f32", reinterpret_cast<void*>(svmopt_csr_matvec_f32)},
      {"svmopt_csr_matvec_f64", reinterpret_cast<void*>(svmopt_csr_matvec_f64)},
      {"svmopt_csr_rmatvec_f32", reinterpret_cast<void*>(svmopt_csr_rmatvec_f32)},
      {"svmopt_csr_rmatvec_f64", reinterpret_cast<void*>(svmopt_csr_rmatvec_f64)},
  };
  for (const auto& t : targets) {
    PyObject* cap = PyCapsule_New(t.fn, nullptr, nullptr);
    if (!cap || PyDict_SetItemString(out, t.name, cap) < 0) {
      Py_XDECREF(cap);
      Py_DECREF(out);
      return nullptr;
    }
    Py_DECREF(cap);
  }
  return out;
}

static PyMethodDef methods[] = {
    {"registrations", registrations, METH_NOARGS, "{FFI target name: PyCapsule} for jax.ffi.register_ffi_target."},
    {nullptr, nullptr, 0, nullptr},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_csr_ffi", "svmopt CSR kernels (XLA FFI).", -1, methods};

PyMODINIT_FUNC PyInit__csr_ffi(void) { return PyModule_Create(&module); }
