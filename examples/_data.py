"""Where the examples find the LIBSVM data: $SVMOPT_DATA, else ../shared/data beside the repository."""
import os
from pathlib import Path

DATA = Path(os.environ.get("SVMOPT_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))


def data(name: str) -> Path:
    p = DATA / f"{name}.xz"
    if not p.exists():
        raise SystemExit(f"data file missing: {p} (set SVMOPT_DATA to the folder holding the LIBSVM files)")
    return p
