"""Build step for svmopt's optional compiled kernels (everything else is in pyproject.toml).

Four XLA FFI custom calls for the CPU: svmopt/_csr_ffi.cc (the sparse products),
svmopt/_dcd_ffi.cc (one pass of dual coordinate descent), svmopt/_l1cd_ffi.cc (the inner
coordinate descent of newglmnet, l1) and svmopt/_mcsvm_ffi.cc (one pass of the Crammer-Singer
sequential dual method). Their headers ship with jaxlib (``jax.ffi.include_dir()``),
which pyproject.toml lists as a build requirement. All are optional: without jaxlib's headers or a
C++17 compiler the build goes on without them, and svmopt uses its pure-XLA paths
(svmopt/_csr.py, svmopt/solvers/dual_cd.py and svmopt/solvers/crammer_singer.py decide at run time;
without the l1 kernel, auto sends l1 problems to alm).
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
    print("svmopt: jaxlib's XLA FFI headers not found; building without the compiled CPU kernels")
ext_modules = [] if inc is None else [
    # -isystem: the XLA headers' own warnings are not ours to show
    Extension(f"svmopt.{name}", [f"svmopt/{name}.cc"], depends=["svmopt/_ffi_module.h"], language="c++",
              extra_compile_args=["-std=c++17", "-O3", "-g0", "-isystem", inc], optional=True)
    for name in ("_csr_ffi", "_dcd_ffi", "_l1cd_ffi", "_mcsvm_ffi")
]
setup(ext_modules=ext_modules)
