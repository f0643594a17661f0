"""Build step for svmopt's optional compiled kernel (everything else is in pyproject.toml).

svmopt/_csr_ffi.cc holds the CPU sparse products as XLA FFI custom calls; its headers ship
with jaxlib (``jax.ffi.include_dir()``), which pyproject.toml lists as a build requirement.
The extension is optional: without jaxlib's headers or a C++17 compiler the build goes on
without it, and svmopt uses its pure-XLA sparse path (svmopt/_csr.py decides at run time).
"""
import os

from setuptools import Extension, setup


def _ffi_include_dir():
    try:
        import jaxlib
    except ImportError:
        return None
    inc = os.path.join(os.path.dirname(jaxlib.__file__), "include")
    return inc if os.path.exists(os.path.join(inc, "xla", "ffi", "api", "ffi.h")) else None


inc = _ffi_include_dir()
if inc is None:
    print("svmopt: jaxlib's XLA FFI headers not found; building without the compiled CSR kernel")
ext_modules = [] if inc is None else [
    # -isystem: the XLA headers' own warnings are not ours to show
    Extension("svmopt._csr_ffi", ["svmopt/_csr_ffi.cc"], language="c++",
              extra_compile_args=["-std=c++17", "-O3", "-g0", "-isystem", inc], optional=True),
]
setup(ext_modules=ext_modules)
