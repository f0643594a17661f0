"""Build svmopt's API reference (HTML) from the docstrings with pdoc:

    python docs/build_api.py [out_dir]        (default: docs/api, not kept in git)

Every public module (no leading underscore) is rendered. A name re-exported by a package
(``svmopt.solvers.alm``, ``svmopt.losses.hinge``) shows the docstring written where it is
defined. ``undocumented()`` lists public names without a docstring; the test suite
(tests/test_docs.py) requires it to be empty.
"""
from __future__ import annotations

import functools
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _quiet(fn):
    """pdoc warns about annotations of inherited dataclass fields it cannot resolve (harmless)."""
    @functools.wraps(fn)
    def wrapped(*a, **kw):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Error parsing type annotation")
            return fn(*a, **kw)
    return wrapped


def _modules():
    """(public modules, every module) as pdoc documents; this checkout's svmopt first on sys.path."""
    import pkgutil

    import pdoc.doc

    sys.path.insert(0, str(ROOT))
    import svmopt

    every = ["svmopt"] + [m.name for m in pkgutil.walk_packages(svmopt.__path__, "svmopt.")]
    public = [n for n in every if not any(p.startswith("_") for p in n.split(".")[1:])]
    return [pdoc.doc.Module.from_name(n) for n in public], [pdoc.doc.Module.from_name(n) for n in every]


def _fill_reexported(modules, every):
    """A variable re-exported without its docstring takes the one written where it is defined."""
    docs = {}
    for m in every:
        for name, text in m._var_docstrings.items():
            obj = m.obj.__dict__.get(name)
            if obj is not None and text.strip():
                docs.setdefault(id(obj), text)
    for m in modules:
        for member in m.members.values():
            if member.docstring.strip():
                continue
            obj = getattr(m.obj, member.name, None)
            if id(obj) in docs:
                member.docstring = docs[id(obj)]
            elif isinstance(obj, type) and (obj.__dict__.get("__doc__") or "").strip():
                member.docstring = obj.__doc__  # e.g. a class a module's __getattr__ makes


def _public(m):
    names = getattr(m.obj, "__all__", None)
    return [d for d in m.members.values() if not d.name.startswith("_") and (names is None or d.name in names)]


@_quiet
def undocumented() -> list[str]:
    """Public modules and names (in each module's ``__all__``) without a docstring."""
    modules, every = _modules()
    _fill_reexported(modules, every)
    out = [f"{m.modulename} (module)" for m in modules if not m.docstring.strip()]
    for m in modules:
        out += [f"{m.modulename}.{d.name}" for d in _public(m) if not d.docstring.strip()]
    return out


@_quiet
def build(out_dir=ROOT / "docs" / "api") -> Path:
    import pdoc
    import pdoc.render

    modules, every = _modules()
    _fill_reexported(modules, every)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    pdoc.render.configure(docformat="markdown", footer_text="svmopt API reference", search=True)
    all_modules = {m.modulename: m for m in modules}
    for m in modules:
        html = pdoc.render.html_module(module=m, all_modules=all_modules)
        path = out_dir / (m.modulename.replace(".", "/") + ".html")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(html, encoding="utf-8")
    (out_dir / "index.html").write_text(pdoc.render.html_index(all_modules), encoding="utf-8")
    (out_dir / "search.js").write_text(pdoc.render.search_index(all_modules), encoding="utf-8")
    return out_dir


if __name__ == "__main__":
    missing = undocumented()
    out = build(sys.argv[1] if len(sys.argv) > 1 else ROOT / "docs" / "api")
    print(f"API reference written to {out}/index.html")
    if missing:
        print("undocumented public names:\n  " + "\n  ".join(missing))
        raise SystemExit(1)
