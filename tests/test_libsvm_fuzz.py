"""Reliability battery for the LIBSVM reader: mutated real lines (heart_scale, a9a) read by
load_svmlight and by scikit-learn's load_svmlight_file (an independent implementation).
Wherever both accept, the data must be identical; whatever we refuse must raise
LibsvmFormatError (never another exception) at the first line that the line-by-line
reference calls bad. Plus: numpy 1's lenient number parser, qid and feature index
ranges, and the command line's one-line errors. The fast run reads ~7,000 lines, the
slow one >= 100,000."""
import io
import lzma
import random
import re

import numpy as np
import pytest
from conftest import data_path

from svmopt.cli import predict_main, train_main
from svmopt.io import LibsvmFormatError, load_svmlight
from svmopt.io import libsvm

datasets = pytest.importorskip("sklearn.datasets")

ALPHABET = b"0123456789:.-+ eE\tnaiqdfxIN#_\r\x0b\x0c\x00\x01\xff"
SNIPPETS = [b" qid:3", b" 99:1", b" 0:1", b"::", b"1e5", b" nan", b"inf", b"1e400", b".", b"2abc", b"-0",
            b" 1099511627776:1", b" 2147483647:1", b" 2147483648:1", b" qid:99999999999999999999",
            b" qid:12345678901234567", b" qid:9223372036854775807", b" qid:9223372036854775808",
            b"0x10", b"1_0", b"infinity", b"+.5", b"1.e5", b"e", b"\n", b"#"]


@pytest.fixture(scope="module")
def real_lines():
    lines = []
    for name in ("heart_scale", "a9a"):
        lines += lzma.decompress(data_path(name).read_bytes()).split(b"\n")[:200]
    return [ln for ln in lines if ln]


def _document(rng, lines):
    """A few real lines with up to three byte-level mutations."""
    doc = [rng.choice(lines) for _ in range(rng.randint(1, 12))]
    for _ in range(rng.choice((0, 1, 1, 1, 2, 3))):
        i = rng.randrange(len(doc))
        s = bytearray(doc[i])
        j = rng.randrange(len(s) + 1)
        op = rng.random()
        if op < 0.25 and j < len(s):
            del s[j]
        elif op < 0.5:
            s.insert(j, rng.choice(ALPHABET))
        elif op < 0.75:
            s.insert(j, rng.choice(b"0123456789 \t"))  # often still a valid line
        else:
            s[j:j] = rng.choice(SNIPPETS)
        doc[i] = bytes(s)
    return b"\n".join(doc) + rng.choice([b"", b"\n"])


def _reference(doc):
    """(first bad line or None, rows) by the line-by-line reference parser."""
    rows = []
    for n, ln in enumerate(doc.split(b"\n"), 1):
        try:
            row = libsvm._parse_line(ln.split(b"#")[0])
        except ValueError:
            return n, rows
        if row is not None:
            rows.append(row)
    return None, rows


def _fuzz(real_lines, n_docs, seed):
    rng = random.Random(seed)
    tally = {"both accept": 0, "we refuse": 0, "sklearn refuses too": 0, "lines": 0}
    for _ in range(n_docs):
        doc = _document(rng, real_lines)
        tally["lines"] += doc.count(b"\n") + 1
        bad_line, rows = _reference(doc)
        try:
            X, y, qid = load_svmlight(io.BytesIO(doc), return_qid=True)
        except LibsvmFormatError as exc:  # any other exception fails the test
            assert exc.lineno == bad_line and str(exc).startswith(f"<stream>, line {bad_line}: "), (doc, exc)
            tally["we refuse"] += 1
            try:
                datasets.load_svmlight_file(io.BytesIO(doc), zero_based=False, query_id=True)
            except Exception:  # noqa: BLE001 - sklearn's own errors vary
                tally["sklearn refuses too"] += 1
            continue
        assert bad_line is None, (doc, bad_line)
        # we accept: so must the independent reader, with the same numbers
        Xs, ys, qs = datasets.load_svmlight_file(io.BytesIO(doc), zero_based=False, query_id=True)
        tally["both accept"] += 1
        # (sklearn gives a file without any feature one column; its width is max index, as ours)
        assert X.shape == (Xs.shape if Xs.nnz else (Xs.shape[0], 0)) and X.dtype == Xs.dtype, doc
        np.testing.assert_array_equal(y, ys)
        for part in ("indptr", "indices", "data"):  # both keep explicit zeros; no toarray: 2**31 columns
            np.testing.assert_array_equal(getattr(X, part), getattr(Xs, part))
        with_qid = [r[1] is not None for r in rows]  # sklearn lists qids of the rows that have one
        np.testing.assert_array_equal(qid[with_qid], qs)
        np.testing.assert_array_equal(qid[~np.array(with_qid, bool)], 0)
    assert tally["both accept"] > n_docs // 10 and tally["we refuse"] > n_docs // 10  # both branches ran
    return tally


def test_fuzz_against_sklearn(real_lines):
    _fuzz(real_lines, n_docs=1000, seed=0)


@pytest.mark.slow
def test_fuzz_against_sklearn_100k_lines(real_lines):
    assert _fuzz(real_lines, n_docs=16000, seed=1)["lines"] >= 100_000


# ---------------------------------------------------------------- numbers, qids, indices


def _numpy1_fromstring(text, sep):
    """numpy < 2's np.fromstring(text, sep=" "): stops at the first unreadable text and
    returns what it read so far (with only a DeprecationWarning) instead of raising.
    (Checked against numpy 1.26.4 on 20,000 random strings of number-like bytes.)"""
    assert sep == " "
    out = []
    number = re.compile(rb"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?|nan)", re.IGNORECASE)
    for tok in text.split():
        m = number.match(tok)
        if not m:
            break
        out.append(float(m.group().decode()))
        if m.end() != len(tok):
            break
    if not out and text[:1].isspace():
        out = [-1.0]  # numpy 1's quirk
    return np.array(out)


GARBAGE = [b"1 5:2abc\n", b"1 5:2e\n", b"1 5:0x10\n", b"1 5:1_0\n", b"1abc 5:2\n", b"1 5:2\n-1 3:1-2\n",
           b"1 5:2abc 6:1\n", b"1 qid:1 5:1.5.5\n"]


@pytest.mark.parametrize("lenient", [False, True], ids=["this numpy", "numpy 1 parser"])
def test_trailing_garbage_refused_on_every_numpy(monkeypatch, lenient):
    """pyproject allows numpy >= 1.24, whose text parser silently stops at '2abc' (this
    emulation behaves as numpy 1.26.4 does on these inputs)."""
    if lenient:
        monkeypatch.setattr(np, "fromstring", _numpy1_fromstring)
    for doc in GARBAGE:
        with pytest.raises(LibsvmFormatError, match=r"is not a number"):
            load_svmlight(io.BytesIO(doc))
    X, y = load_svmlight(io.BytesIO(b"1 5:2 6:1e-3\n-1 2:+.5\n"))  # the emulation parses good text
    np.testing.assert_array_equal(X.toarray(), [[0, 0, 0, 0, 2, 1e-3], [0, 0.5, 0, 0, 0, 0]])


def test_qid_range(tmp_path):
    p = tmp_path / "rank.txt"
    p.write_bytes(b"1 qid:9223372036854775807 1:1\n2 qid:000000000000000000000012345678901234567 1:1\n")
    _, _, qid = load_svmlight(p, return_qid=True)
    assert qid.tolist() == [2**63 - 1, 12345678901234567]  # exact, though float64 cannot hold them
    p.write_bytes(b"1 qid:1 1:1\n2 qid:9223372036854775808 1:1\n")
    with pytest.raises(LibsvmFormatError, match=r"^rank\.txt, line 2: qid '9223372036854775808' is out of range"):
        load_svmlight(p, return_qid=True)
    p.write_bytes(b"1 qid:" + b"9" * 5000 + b" 1:1\n")
    with pytest.raises(LibsvmFormatError, match=r"^rank\.txt, line 1: qid '9999.*\.\.\.' is out of range"):
        load_svmlight(p)


def test_feature_index_range(tmp_path):
    p = tmp_path / "wide.txt"
    p.write_bytes(b"1 2147483647:1\n")
    X, _ = load_svmlight(p)  # the widest int32 allows
    assert X.shape == (1, 2**31 - 1) and X.indices.dtype == np.int32 and X.indices[0] == 2**31 - 2
    p.write_bytes(b"1 1:1\n-1 3:1 1099511627776:1\n")
    with pytest.raises(LibsvmFormatError, match=r"^wide\.txt, line 2: feature index '1099511627776' is out "
                                                r"of range \(at most 2147483647 columns"):
        load_svmlight(p)
    p.write_bytes(b"1 0:1 2147483647:1\n")
    with pytest.raises(LibsvmFormatError, match=r"line 1: feature index '2147483647' is out of range"):
        load_svmlight(p, zero_based=True)
    with pytest.raises(ValueError, match=r"n_features must be in \[0, 2147483647\]"):
        load_svmlight(p, n_features=2**31)


# ---------------------------------------------------------------- command line


def test_train_errors_are_one_line_and_early(tmp_path, capsys):
    wide = tmp_path / "wide.txt"
    wide.write_bytes(b"1 1:1\n-1 1099511627776:1\n")
    assert train_main([str(wide), str(tmp_path / "w.model")]) == 1
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and "wide.txt, line 2: feature index '1099511627776' is out of range" in err
    # a missing output folder is found before anything is read or trained
    assert train_main([str(data_path("a9a")), str(tmp_path / "no" / "a9a.model")]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err == (f"svmopt-train: error: cannot write the model to '{tmp_path / 'no' / 'a9a.model'}'"
                                 f": directory '{tmp_path / 'no'}' does not exist\n")
    assert predict_main([str(data_path("a9a.t")), str(tmp_path / "any.model"), str(tmp_path / "no" / "out")]) == 1
    assert capsys.readouterr().err == (f"svmopt-predict: error: cannot write the predictions to "
                                       f"'{tmp_path / 'no' / 'out'}': directory '{tmp_path / 'no'}' does not exist\n")
