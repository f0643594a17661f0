"""JAX's persistent compilation cache, on by default for svmopt users.

A first call of a solver compiles its loop, which takes longer than many solves. JAX can keep
compiled programs on disk; svmopt turns that on when it is
imported, in a per-user folder, so a new process reuses what an earlier one compiled:

    $SVMOPT_CACHE_DIR, else $XDG_CACHE_HOME/svmopt/jax, else ~/.cache/svmopt/jax

It stays off when the user already configured a cache (``jax_compilation_cache_dir``: their
choice wins) or sets ``SVMOPT_COMPILATION_CACHE=0``. ``svmopt.enable_compilation_cache(path)``
and ``svmopt.disable_compilation_cache()`` do the same at run time. Note that the setting is
JAX's own, so other JAX programs in the same process use the folder too.
"""
from __future__ import annotations

import os
from pathlib import Path

import jax

__all__ = ["enable_compilation_cache", "disable_compilation_cache", "default_cache_dir"]

_ours = {"dir": None}


def default_cache_dir() -> Path:
    if os.environ.get("SVMOPT_CACHE_DIR"):
        return Path(os.environ["SVMOPT_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "svmopt" / "jax"


def enable_compilation_cache(path=None) -> Path | None:
    """Keep compiled programs in ``path`` (default: ``default_cache_dir()``); returns the folder."""
    path = Path(path) if path is not None else default_cache_dir()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None  # a read-only home: compile as before
    jax.config.update("jax_compilation_cache_dir", str(path))
    # cache them all: many of svmopt's programs compile in under 1 s, which JAX's default skips
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    _ours["dir"] = str(path)
    return path


def disable_compilation_cache() -> None:
    """Stop keeping compiled programs on disk (JAX's setting, for the whole process)."""
    jax.config.update("jax_compilation_cache_dir", None)
    _ours["dir"] = None


def enable_default() -> None:
    if os.environ.get("SVMOPT_COMPILATION_CACHE", "1").strip().lower() in ("0", "off", "false", "no"):
        return
    if jax.config.jax_compilation_cache_dir:  # configured by the user
        return
    enable_compilation_cache()
