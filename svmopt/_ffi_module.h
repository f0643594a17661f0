// The Python side of svmopt's XLA FFI extension modules (svmopt/_csr_ffi.cc, svmopt/_dcd_ffi.cc).
//
// Each module exposes `registrations()` -> {target name: PyCapsule of the handler}, which the
// Python side passes to jax.ffi.register_ffi_target. SVMOPT_FFI_MODULE(name, doc, targets...)
// defines that function and the module's init; a target is {"name", handler symbol}.

#pragma once

#include <Python.h>

namespace svmopt_ffi {

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
