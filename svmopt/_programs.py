"""svmopt's compiled programs kept on disk, so a new process skips tracing and lowering too.

JAX's persistent compilation cache (``svmopt._cache``) saves XLA's compile, but its key is the
lowered program: a new process still traces and lowers svmopt's loops first, in Python, which
for a small problem takes longer than the solve. Here the *executable* of each driver program is
stored under a key computed without tracing:

* every static part of the arguments' pytree structure (the method's settings, the loss,
  the regularizer, the operator's layout), written out by ``_canon``: numbers, strings,
  svmopt's own classes field by field, and svmopt's own functions by module, name, line and
  the values they close over;
* the leaves' shapes, dtypes, weak types and shardings;
* the source of the svmopt package (every ``.py`` and built extension under it), JAX's and
  jaxlib's versions, the backend and its devices, the JAX settings that change tracing, and
  whether the CPU custom calls are built (the lowering depends on it).

A structure ``_canon`` cannot write out completely (a user's own loss or regularizer
function, an object of a foreign class) has no key and is never stored: such programs take
the ordinary path, traced and lowered in each process, with XLA's compile still cached by JAX.
So two programs that differ in anything the trace could see never share a file.

Only a program whose custom calls are all svmopt's own kernels (``svmopt._ffi``) is stored: one
that calls into LAPACK (the cutting plane's Cholesky) loaded in a new process and crashed it
(segmentation fault), the target being unknown to XLA there until something lowers a
factorization. Each file starts with a header naming its key, the custom calls it makes and a
digest of its payload; a file whose header does not match (truncated, corrupted, written for
another key) is removed unread, and a program whose kernels are not registered in this process is
not loaded.

The files live in ``programs/`` beside JAX's cache (on only while that cache is, and only in a
local folder), at most ``MAX_BYTES`` in all: past that the least recently used go. A file that
cannot be read (truncated, another jaxlib) is removed and the program compiled as before.
"""
from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import os
import pickle
import re
import tempfile
import types
from pathlib import Path

import numpy as np

import jax

from . import _csr, _dcd, _ffi, _l1cd, _mcsvm

__all__ = ["program_key", "usable", "load", "store", "folder", "compile_events", "fresh", "custom_calls", "MAX_BYTES"]

MAX_BYTES = 512 << 20
"""Disk the stored programs may use; the least recently used go past it."""

_PKG = Path(__file__).resolve().parent
_counts = {"loaded": 0, "stored": 0, "unkeyed": 0, "refused": 0}


class _Uncanonical(Exception):
    pass


def _ours(module) -> bool:
    return isinstance(module, str) and (module == "svmopt" or module.startswith("svmopt."))


def _type_name(t) -> str:
    module = getattr(t, "__module__", None) or ""
    if module in ("builtins", "collections") or _ours(module) or module.startswith(("jax.", "jaxlib.", "numpy")):
        return f"{module}.{t.__qualname__}"
    raise _Uncanonical(t)


def _canon(x, depth=0):
    """A string that determines everything tracing can read from ``x`` (a static field), or
    ``_Uncanonical`` when that cannot be vouched for."""
    if depth > 40:
        raise _Uncanonical("too deep")
    rec = functools.partial(_canon, depth=depth + 1)
    if x is None or isinstance(x, (bool, int, str, bytes)):
        return f"{type(x).__name__}:{x!r}"
    if isinstance(x, float):
        return f"float:{x.hex()}" if x == x else "float:nan"
    if isinstance(x, enum.Enum):
        return f"{_type_name(type(x))}.{x.name}"
    if isinstance(x, (np.dtype, np.generic)):
        return f"np:{type(x).__name__}:{x!r}"
    if isinstance(x, type):
        return f"type:{_type_name(x)}"
    if isinstance(x, tuple) and hasattr(x, "_fields"):  # a namedtuple
        return f"{_type_name(type(x))}({','.join(map(rec, x))})"
    if isinstance(x, (tuple, list)):
        return f"{type(x).__name__}({','.join(map(rec, x))})"
    if isinstance(x, dict):
        return "dict(" + ",".join(f"{rec(k)}:{rec(v)}" for k, v in sorted(x.items(), key=lambda kv: repr(kv[0]))) + ")"
    if isinstance(x, (frozenset, set)):
        return f"{type(x).__name__}(" + ",".join(sorted(map(rec, x))) + ")"
    if isinstance(x, functools.partial):
        return f"partial({rec(x.func)},{rec(x.args)},{rec(x.keywords)})"
    if isinstance(x, types.FunctionType):
        if not _ours(x.__module__):
            raise _Uncanonical(x)  # a user's function: its body and globals are not ours to vouch for
        code = x.__code__
        cells = tuple(c.cell_contents for c in x.__closure__ or ())
        return (f"fn:{x.__module__}:{x.__qualname__}:{code.co_firstlineno}:{rec(cells)}:{rec(x.__defaults__)}"
                f":{rec(x.__kwdefaults__)}")
    if isinstance(x, types.BuiltinFunctionType):
        module = getattr(x, "__module__", None) or ""
        if module.startswith(("jax", "numpy", "math", "builtins")) or _ours(module):
            return f"builtin:{module}.{x.__qualname__}"
        raise _Uncanonical(x)
    if isinstance(x, types.MethodType):
        return f"method:{rec(x.__func__)}:{rec(x.__self__)}"
    if isinstance(x, np.ndarray):
        return f"ndarray:{x.dtype}:{x.shape}:{hashlib.sha256(np.ascontiguousarray(x).tobytes()).hexdigest()}"
    name = _type_name(type(x))  # raises for a foreign class
    if name.startswith(("jax.", "jaxlib.", "numpy")):
        raise _Uncanonical(x)  # (shardings and the like are in the leaves' part of the key)
    if dataclasses.is_dataclass(x):
        return f"{name}(" + ",".join(f"{f.name}={rec(getattr(x, f.name))}" for f in dataclasses.fields(x)) + ")"
    if hasattr(x, "__dict__") or hasattr(x, "__slots__"):
        fields = dict(getattr(x, "__dict__", {}))
        for s in getattr(type(x), "__slots__", ()):
            if hasattr(x, s):
                fields[s] = getattr(x, s)
        return f"{name}{rec(fields)}"
    raise _Uncanonical(x)


def _tree(td) -> str:
    data = td.node_data()
    if data is None:
        return "*" if td.num_leaves == 1 else "None"
    t, aux = data
    kids = ",".join(_tree(c) for c in td.children())
    return f"{_type_name(t)}[{_canon(aux)}]({kids})"


@functools.cache
def _environment() -> str:
    h = hashlib.sha256()
    for p in sorted(_PKG.rglob("*")):
        if p.suffix in (".py", ".so", ".pyd") and p.is_file():
            h.update(str(p.relative_to(_PKG)).encode())
            h.update(p.read_bytes())
    import jaxlib
    devs = jax.devices()
    parts = [h.hexdigest(), jax.__version__, jaxlib.__version__, jax.default_backend(),
             devs[0].client.platform_version, repr(sorted({d.device_kind for d in devs})), str(len(devs)),
             str(jax.process_count()), os.environ.get("XLA_FLAGS", "")]
    if jax.default_backend() == "cpu":  # the lowering uses the custom calls where they are built
        parts += [f"csr_ffi={_csr.ffi_available()}", f"dcd_ffi={_dcd.available()}", f"l1cd_ffi={_l1cd.available()}",
                  f"mcsvm_ffi={_mcsvm.available()}"]
    return "|".join(parts)


def _settings() -> str:
    c = jax.config
    return repr((c.jax_enable_x64, c.jax_default_matmul_precision, c.jax_numpy_rank_promotion,
                 c.jax_numpy_dtype_promotion, getattr(c, "jax_default_prng_impl", None)))


def folder() -> Path | None:
    """Where programs are stored: ``programs/`` in JAX's (local) persistent cache folder, or None."""
    d = jax.config.jax_compilation_cache_dir
    if not d or "://" in str(d):
        return None
    return Path(d) / "svmopt-programs"


BACKENDS = ("cpu",)
"""Backends whose stored programs are used. Only the CPU's are tested (CI has no accelerator):
JAX 0.10's CPU executables already showed one way a serialized program can load and then fail
to run (``store``), so the accelerators keep JAX's own cache until their round trip is tested."""


def usable(args) -> bool:
    """Programs on these arguments may be stored: a cache folder, a backend in ``BACKENDS``, one
    process, and every array on the default device (a program over several devices, or several
    processes, compiles as before)."""
    if folder() is None or jax.process_count() != 1 or jax.default_backend() not in BACKENDS:
        return False
    home = jax.devices()[0]
    for x in jax.tree_util.tree_leaves(args):
        sharding = getattr(x, "sharding", None)
        if sharding is not None and sharding.device_set != {home}:
            return False
    return True


def program_key(name, fn, treedef, signature, donate) -> str | None:
    """The file name for program ``fn`` on arguments of this structure and signature, or None
    when a static part cannot be vouched for."""
    try:
        text = "\n".join([_environment(), _settings(), name, _canon(fn), _tree(treedef), repr(signature),
                          repr(tuple(donate))])
    except _Uncanonical:
        _counts["unkeyed"] += 1
        return None
    return hashlib.sha256(text.encode()).hexdigest()


_MAGIC = b"svmopt-program 2\n"
_CALL = re.compile(r'custom_call_target="([^"]+)"')


def custom_calls(exe) -> frozenset | None:
    """The custom-call targets of a compiled program (None when its text cannot be read)."""
    try:
        return frozenset(_CALL.findall(exe.as_text()))
    except Exception:  # noqa: BLE001
        return None


def _header(key: str, calls, payload: bytes) -> bytes:
    digest = hashlib.sha256(key.encode() + b"\0" + payload).hexdigest()
    return _MAGIC + f"{key} {digest} {','.join(sorted(calls))}\n".encode()


def _read(path: Path, key: str):
    """(custom calls, payload) of a stored file, or None when it is not a sound entry for ``key``."""
    try:
        blob = path.read_bytes()
    except OSError:
        return None
    if not blob.startswith(_MAGIC):
        return _drop(path)
    line, _, payload = blob[len(_MAGIC):].partition(b"\n")
    parts = line.decode("ascii", "replace").split(" ")
    if len(parts) != 3 or parts[0] != key:
        return _drop(path)
    calls = frozenset(c for c in parts[2].split(",") if c)
    if _header(key, calls, payload) != blob[:len(_MAGIC) + len(line) + 1]:
        return _drop(path)
    return calls, payload


def _drop(path: Path):
    try:
        path.unlink()
    except OSError:
        pass
    return None


def load(key, in_tree):
    """The stored executable for ``key`` (a ``jax.stages.Compiled``), or None."""
    where = folder()
    if where is None or key is None:
        return None
    path = where / f"{key}.bin"
    entry = _read(path, key)
    if entry is None:
        return None
    calls, payload = entry
    if not calls <= _ffi.registered():  # a kernel this process has not registered: never run it
        return None
    try:
        from jax.experimental import serialize_executable as se
        out_tree, data = pickle.loads(payload)
        # on the default device alone (``usable``): by default the executable would be loaded for
        # every device of the backend, and a one-device program then fails to run
        exe = se.deserialize_and_load(data, in_tree, out_tree, execution_devices=jax.devices()[:1])
    except Exception:  # noqa: BLE001  (written by another jaxlib: compile again)
        return _drop(path)
    try:
        os.utime(path)  # recently used (eviction goes by modification time)
    except OSError:
        pass
    _counts["loaded"] += 1
    return exe


def compile_events() -> tuple:
    """(XLA compiles, executables JAX's persistent cache handed out) in this process so far. Read
    before and after a compile: the executable is fresh only when the first grew and the second
    did not (not from JAX's disk cache, nor from its in-memory one; see ``store``)."""
    return tuple(_events)


_events = [0, 0]


def _on_event(event, *_, **__):
    if event == "/jax/compilation_cache/cache_hits":
        _events[1] += 1


def _on_duration(event, *_, **__):
    if event == "/jax/core/compile/backend_compile_duration":
        _events[0] += 1


jax.monitoring.register_event_listener(_on_event)
jax.monitoring.register_event_duration_secs_listener(_on_duration)


def fresh(before, after) -> bool:
    return after[0] > before[0] and after[1] == before[1]


def store(key, exe) -> None:
    """Keep ``exe`` under ``key``; silently nothing where that cannot be done.

    Only a freshly compiled executable may come here. One that JAX itself loaded from its
    persistent cache serializes without its kernels on the CPU (jax 0.10: loaded again, it fails
    with "Function wrapped_... not found"), so ``driver.compiled`` does not store those."""
    where = folder()
    if where is None or key is None:
        return
    calls = custom_calls(exe)
    if calls is None or any(not c.startswith(_ffi.PREFIX) for c in calls):  # e.g. LAPACK: not proven safe
        _counts["refused"] += 1
        return
    try:
        from jax.experimental import serialize_executable as se
        data, _, out_tree = se.serialize(exe)
        payload = pickle.dumps((out_tree, data), protocol=pickle.HIGHEST_PROTOCOL)
        where.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=where, suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(_header(key, calls, payload))
            f.write(payload)
        os.replace(tmp, where / f"{key}.bin")  # atomic: a reader sees all of a file or none
        _counts["stored"] += 1
        _evict(where)
    except Exception:  # noqa: BLE001  (no serialization on this backend, a full disk: compile next time)
        return


def _evict(where: Path) -> None:
    files = []
    for p in where.glob("*.bin"):
        try:
            st = p.stat()
        except OSError:
            continue
        files.append((st.st_mtime, st.st_size, p))
    total = sum(s for _, s, _ in files)
    for _, size, p in sorted(files):
        if total <= MAX_BYTES:
            break
        try:
            p.unlink()
            total -= size
        except OSError:
            pass
