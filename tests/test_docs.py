"""The documentation a newcomer reads: every public name has a docstring, the API reference
builds from them (pdoc), and every file the README and docs/ link to exists."""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs"))

import build_api  # noqa: E402


def test_every_public_name_has_a_docstring():
    assert build_api.undocumented() == []


def test_api_reference_builds(tmp_path):
    out = build_api.build(tmp_path)
    index = (out / "index.html").read_text()
    assert "svmopt" in index
    top = (out / "svmopt.html").read_text()
    for text in ("relative duality gap", "solve_multiclass", "ConvergenceWarning"):
        assert text in top, text
    assert "Cross Validation Accuracy" in (out / "svmopt" / "cli.html").read_text()
    assert "L1-loss SVM" in (out / "svmopt" / "losses.html").read_text()  # a re-exported name's own docstring


def test_links_point_to_files():
    """README.md, docs/*.md and bench/README.md link only to files in the repository."""
    pages = [ROOT / "README.md", ROOT / "bench" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for page in pages:
        text = page.read_text()
        for target in re.findall(r"\]\(([^)#\s]+)", text):
            if "://" in target:
                continue
            assert (page.parent / target).exists(), f"{page.name} links to missing {target}"
        for target in re.findall(r"`((?:docs|bench|examples)/[\w./-]+\.(?:md|py|sh))`", text):
            assert (ROOT / target).exists(), f"{page.name} names missing {target}"
    assert "SPEC §" not in (ROOT / "README.md").read_text()


def test_package_metadata_and_typing_marker():
    import tomllib

    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    project = meta["project"]
    assert project["classifiers"] and project["keywords"] and project["readme"] == "README.md"
    assert "Typing :: Typed" in project["classifiers"] and (ROOT / "svmopt" / "py.typed").exists()
    assert "py.typed" in meta["tool"]["setuptools"]["package-data"]["svmopt"]
    assert any(d.startswith("pdoc") for d in project["optional-dependencies"]["test"])
