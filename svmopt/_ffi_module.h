// The Python side of svmopt's XLA FFI extension modules (svmopt/_csr_ffi.cc, svmopt/_dcd_ffi.cc,
// svmopt/_l1cd_ffi.cc), and what more than one of them uses (SplitMix64).
//
// Each module exposes `registrations()` -> {target name: PyCapsule of the handler}, which the
// Python side passes to jax.ffi.register_ffi_target. SVMOPT_FFI_MODULE(name, doc, targets...)
// defines that function and the module's init; a target is {"name", handler symbol}.

#pragma once

#include <Python.h>

#include <cstdint>

namespace svmopt_ffi {

// splitmix64 (Steele, Lea, Flood 2014): a small, fast generator, seeded from the two words of a
// jax.random key. Only the order of a pass depends on it (dual CD's rows, newglmnet's columns).
struct SplitMix64 {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // uniform in [0, bound), bound < 2^32 (Lemire's multiply-shift; its bias is below 2^-32)
  uint32_t below(uint32_t bound) { return uint32_t(((next() >> 32) * uint64_t(bound)) >> 32); }
};

struct Target {
  const char* name;
  void* fn;
};

template <size_t N>
PyObject* capsules(const Target (&targets)[N]) {
  PyObject* out = PyDict_New();
  if (!out) return nullptr;
  for (const Target& t : targets) {
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

}  // namespace svmopt_ffi

#define SVMOPT_FFI_TARGET(symbol) \
  svmopt_ffi::Target { #symbol, reinterpret_cast<void*>(symbol) }

// SVMOPT_FFI_MODULE_WITH(name, doc, method, targets...): the same with one more module function,
// ``method`` a macro that expands to its PyMethodDef entry.
#define SVMOPT_FFI_NO_METHOD \
  { nullptr, nullptr, 0, nullptr }

#define SVMOPT_FFI_MODULE(NAME, DOC, ...) SVMOPT_FFI_MODULE_WITH(NAME, DOC, SVMOPT_FFI_NO_METHOD, __VA_ARGS__)

#define SVMOPT_FFI_MODULE_WITH(NAME, DOC, METHOD, ...)                                                      \
  static PyObject* registrations(PyObject*, PyObject*) {                                                 \
    static const svmopt_ffi::Target targets[] = {__VA_ARGS__};                                            \
    return svmopt_ffi::capsules(targets);                                                                 \
  }                                                                                                       \
  static PyMethodDef methods[] = {                                                                        \
      {"registrations", registrations, METH_NOARGS,                                                       \
       "{FFI target name: PyCapsule} for jax.ffi.register_ffi_target."},                                  \
      METHOD,                                                                                             \
      {nullptr, nullptr, 0, nullptr},                                                                     \
  };                                                                                                      \
  static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, #NAME, DOC, -1, methods};                    \
  PyMODINIT_FUNC PyInit_##NAME(void) { return PyModule_Create(&module); }
