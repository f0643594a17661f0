"""The package's shape, checked: no import cycle among svmopt's modules, no private name imported
across modules, no module over 600 lines (docs/ARCHITECTURE.md)."""
import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "svmopt"
MAX_LINES = 600


def _module(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _resolve(mod: str, level: int, name: str | None, is_pkg: bool) -> str:
    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def _modules():
    return {_module(p): p for p in PKG.rglob("*.py")}


def _imports(mod: str, path: Path, known: set):
    """(imported module, names taken from it, line) for every svmopt import in the file, at any depth."""
    tree = ast.parse(path.read_text())
    is_pkg = path.name == "__init__.py"
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = _resolve(mod, node.level, node.module, is_pkg) if node.level else node.module or ""
            if not target.startswith("svmopt"):
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in known:  # "from . import driver": the module itself
                    out.append((sub, [], node.lineno))
                else:
                    out.append((target, [alias.name], node.lineno))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("svmopt"):
                    out.append((alias.name, [], node.lineno))
    return out


def _graph():
    mods = _modules()
    known = set(mods)
    graph = {m: set() for m in mods}
    names = {}
    for m, p in mods.items():
        for target, taken, line in _imports(m, p, known):
            if target in known and target != m:
                graph[m].add(target)
                names.setdefault(m, []).extend((target, t, line) for t in taken)
    return graph, names


def _cycles(graph):
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def _package_of(mod):
    return mod.rsplit(".", 1)[0]


def test_no_import_cycle():
    graph, _ = _graph()
    # a package's __init__ importing its own modules is the package's face, not a cycle of modules
    faces = {m: {t for t in ts if not (_package_of(t) == m)} for m, ts in graph.items()}
    assert _cycles(faces) == []


def test_no_private_name_imported_across_modules():
    _, names = _graph()
    bad = [(m, target, name, line) for m, taken in names.items() for target, name, line in taken
           if name.startswith("_") and not name.startswith("__")]
    assert bad == []


def test_no_private_attribute_of_another_svmopt_module():
    """``module._name`` reads of another svmopt module's private names (e.g. ``driver._compile``)."""
    mods = _modules()
    bad = []
    for m, p in mods.items():
        tree = ast.parse(p.read_text())
        aliases = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("svmopt")):
                for a in node.names:
                    aliases[a.asname or a.name] = a.name
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.attr.startswith("_") and not node.attr.startswith("__")
                    and node.value.id in aliases and f"svmopt.{aliases[node.value.id]}" in mods
                    and not aliases[node.value.id].endswith("_ffi")):
                bad.append((m, f"{node.value.id}.{node.attr}", node.lineno))
    assert bad == []


def test_no_module_over_600_lines():
    long = {str(p.relative_to(PKG)): n for p in PKG.rglob("*.py") if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}
