"""The one registry of svmopt's compiled CPU kernels (XLA FFI custom calls).

Three optional extensions are built by ``pip install -e .`` (setup.py): ``_csr_ffi`` (sparse
products), ``_dcd_ffi`` (a dual coordinate descent pass) and ``_l1cd_ffi`` (newglmnet's inner
solve). Each Python module that wraps one (``svmopt._csr``, ``svmopt._dcd``, ``svmopt._l1cd``)
asks ``load(extension, self_test)`` once per process. The registry imports the extension,
registers its targets with XLA, and runs the module's self-test on a tiny known problem before
trusting it: a broken or ABI-mismatched build falls back to the pure-JAX path instead of failing
(or lying) inside a solver. A pass is remembered beside JAX's cache folder, keyed by the
extension's bytes and JAX's versions, so a new process only registers it.

``registered()`` lists the targets XLA knows in this process: the program store
(``svmopt._programs``) stores an executable only when all its custom calls are svmopt targets,
and loads one only when those are registered.
"""
from __future__ import annotations

import hashlib
import importlib
import os
from pathlib import Path

import jax

__all__ = ["load", "registered", "extension", "PREFIX"]

PREFIX = "svmopt_"
"""Every target svmopt registers starts with this."""

_loaded: dict = {}
_targets: set = set()


def load(extension: str, self_test) -> bool:
    """True when ``svmopt.<extension>`` is built, its targets are registered, and ``self_test()``
    passed (now or in an earlier process with this very build). Cached per process."""
    if extension in _loaded:
        return _loaded[extension]
    ok = _loaded[extension] = False  # (a self-test that asks again gets False, not a recursion)
    try:
        module = importlib.import_module(f"svmopt.{extension}")
        for name, capsule in module.registrations().items():
            jax.ffi.register_ffi_target(name, capsule, platform="cpu", api_version=1)
            _targets.add(name)
        marker = _marker(module.__file__)
        if marker is not None and marker.exists():
            ok = True
        else:
            # evaluated now even when the first question comes from inside a trace
            with jax.ensure_compile_time_eval():
                ok = bool(self_test())
            if ok and marker is not None:
                try:
                    marker.parent.mkdir(parents=True, exist_ok=True)
                    marker.touch()
                except OSError:
                    pass
    except Exception:  # noqa: BLE001  (not built, old jax without jax.ffi, ABI mismatch: pure JAX)
        ok = False
    _loaded[extension] = ok
    return ok


def extension(name: str):
    """The built extension module ``svmopt.<name>`` (its host-side helpers too), or None."""
    try:
        return importlib.import_module(f"svmopt.{name}")
    except ImportError:
        return None


def registered() -> frozenset:
    """The custom-call targets svmopt registered in this process."""
    return frozenset(_targets)


def _marker(module_file) -> Path | None:
    """Where a passed self-test of this build is remembered (beside JAX's local cache), or None."""
    where = jax.config.jax_compilation_cache_dir
    if not where or "://" in str(where):
        return None
    try:
        blob = Path(module_file).read_bytes()
    except OSError:
        return None
    import jaxlib
    h = hashlib.sha256(blob)
    h.update(f"|{jax.__version__}|{jaxlib.__version__}|{os.uname().machine}".encode())
    return Path(where) / "svmopt-programs" / f"selftest-{h.hexdigest()}"
