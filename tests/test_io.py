"""LIBSVM file I/O: real data against MANIFEST.tsv, round trips, and malformed files."""
import csv
import gzip
import hashlib
import io
import lzma
import random

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import DATA, data_path

from svmopt.io import LibsvmFormatError, dump_svmlight, load_svmlight
from svmopt.io import libsvm
from svmopt.io.libsvm import _parse_line


def _manifest():
    with open(DATA / "MANIFEST.tsv", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


MANIFEST = _manifest()


@pytest.mark.parametrize("row", MANIFEST, ids=[r["name"] for r in MANIFEST])
def test_manifest_stats(row):
    raw = lzma.decompress((DATA / row["file"]).read_bytes())
    assert hashlib.sha256(raw).hexdigest() == row["sha256_of_uncompressed"]

    X, y = load_svmlight(DATA / row["file"])
    assert sp.isspmatrix_csr(X) and X.has_sorted_indices
    assert X.shape == (int(row["n_rows"]), int(row["n_features(max index)"]))
    assert X.indices.max() + 1 == int(row["n_features(max index)"])  # max index is present
    assert X.nnz == int(row["nnz"])
    assert y.dtype == np.float64 and y.shape == (X.shape[0],)
    expected = {}
    for item in row["label_values(with counts)"].split(","):
        value, count = item.rsplit(":", 1)
        expected[float(value)] = int(count)
    values, counts = np.unique(y, return_counts=True)
    assert dict(zip(values.tolist(), counts.tolist())) == expected


def test_values_match_text():
    """Spot-check parsed numbers against the literal text of heart_scale line 1."""
    X, y = load_svmlight(data_path("heart_scale"))
    first = lzma.decompress(data_path("heart_scale").read_bytes()).split(b"\n")[0].split()
    assert y[0] == 1.0
    row = X[0].toarray().ravel()
    for tok in first[1:]:
        i, v = tok.split(b":")
        assert row[int(i) - 1] == float(v)
    assert X[0].nnz == len(first) - 1


@pytest.mark.parametrize("name", ["ijcnn1", "breast-cancer", "diabetes_scale"])
def test_matches_sklearn(name):
    """Same numbers as scikit-learn's reader (an independent implementation)."""
    datasets = pytest.importorskip("sklearn.datasets")
    with lzma.open(data_path(name)) as f:
        Xs, ys = datasets.load_svmlight_file(f)
    X, y = load_svmlight(data_path(name))
    np.testing.assert_array_equal(y, ys)
    for a in ("indptr", "indices", "data"):
        np.testing.assert_array_equal(getattr(X, a), getattr(Xs, a))


# ---------------------------------------------------------------- round trips


def _canonical(X):
    X = X.copy()
    X.eliminate_zeros()
    return X


@pytest.mark.parametrize("name, suffix", [("a9a", ""), ("a9a", ".xz"), ("heart_scale", ""),
                                          ("heart_scale", ".xz"), ("heart_scale", ".gz"),
                                          ("heart_scale", ".bz2")])
def test_round_trip(tmp_path, name, suffix):
    X, y = load_svmlight(data_path(name))
    out = tmp_path / f"{name}.txt{suffix}"
    dump_svmlight(X, y, out)
    X2, y2 = load_svmlight(out, n_features=X.shape[1])
    Xc = _canonical(X)
    assert X2.shape == X.shape
    np.testing.assert_array_equal(X2.indptr, Xc.indptr)
    np.testing.assert_array_equal(X2.indices, Xc.indices)
    np.testing.assert_array_equal(X2.data, Xc.data)  # exact, thanks to %.17g
    np.testing.assert_array_equal(y2, y)


def test_dump_reproduces_a9a_lines(tmp_path):
    # a9a is all ':1' values and +/-1 labels, so the dump equals the source text
    # up to '+1' -> '1' and the trailing space.
    X, y = load_svmlight(data_path("a9a"))
    out = tmp_path / "a9a.txt"
    dump_svmlight(X, y, out)
    src = lzma.decompress(data_path("a9a").read_bytes()).decode().splitlines()
    got = out.read_text().splitlines()
    assert len(got) == len(src)
    for i in [0, 1, 1000, len(src) - 1]:
        assert got[i] == src[i].strip().replace("+1 ", "1 ", 1)


def test_dump_dense_format(tmp_path):
    X = np.array([[0.0, 1.5, 0.0], [0.1, 0.0, -2.0], [0.0, 0.0, 0.0]])
    y = np.array([1.0, -1.0, 2.5])
    out = tmp_path / "d.txt"
    dump_svmlight(X, y, out)
    assert out.read_text() == "1 2:1.5\n-1 1:0.10000000000000001 3:-2\n2.5\n"
    X2, y2 = load_svmlight(out, n_features=3)
    np.testing.assert_array_equal(X2.toarray(), X)
    np.testing.assert_array_equal(y2, y)

    dump_svmlight(X, y, out, zero_based=True, qid=[4, 4, 7])
    assert out.read_text().splitlines()[0] == "1 qid:4 1:1.5"
    X3, y3, q3 = load_svmlight(out, n_features=3, zero_based=True, return_qid=True)
    np.testing.assert_array_equal(X3.toarray(), X)
    np.testing.assert_array_equal(q3, [4, 4, 7])

    with pytest.raises(ValueError, match="finite"):
        dump_svmlight(np.array([[np.nan]]), [1], out)


# ---------------------------------------------------------------- options


def test_n_features():
    X, y = load_svmlight(data_path("a9a.t"), n_features=123)
    assert X.shape == (16281, 123)
    # Expected error line: the first line holding an index above 50.
    lines = lzma.decompress(data_path("a9a.t").read_bytes()).split(b"\n")
    bad = next(i + 1 for i, ln in enumerate(lines)
               if any(int(t.split(b":")[0]) > 50 for t in ln.split()[1:]))
    with pytest.raises(LibsvmFormatError, match=rf"^a9a\.t\.xz, line {bad}: .*n_features=50") as e:
        load_svmlight(data_path("a9a.t"), n_features=50)
    assert e.value.lineno == bad and e.value.filename == "a9a.t.xz"


def test_qid(tmp_path):
    p = tmp_path / "rank.txt"
    p.write_bytes(b"3 qid:1 1:0.5 3:1\n2 qid:1 2:1\n1 qid:12 1:1 # c\n0 2:4\n")
    X, y, qid = load_svmlight(p, return_qid=True)
    np.testing.assert_array_equal(qid, [1, 1, 12, 0])  # 0 where the row has no qid
    X2, y2 = load_svmlight(p)  # ignored
    np.testing.assert_array_equal(y2, [3, 2, 1, 0])
    np.testing.assert_array_equal(X.toarray(), [[0.5, 0, 1], [0, 1, 0], [1, 0, 0], [0, 4, 0]])
    assert (X2 != X).nnz == 0


def test_comments_blank_lines_whitespace(tmp_path):
    p = tmp_path / "c.txt"
    p.write_bytes(b"# header\n+1 1:1 3:2.5e-3 # trailing\n\n   \n-1.0\t2:-7\r\n# end\n2.000000 3:1")
    X, y = load_svmlight(p)
    np.testing.assert_array_equal(y, [1, -1, 2])
    np.testing.assert_array_equal(X.toarray(), [[1, 0, 2.5e-3], [0, -7, 0], [0, 0, 1]])


def test_zero_based_and_dtype(tmp_path):
    p = tmp_path / "z.txt"
    p.write_bytes(b"1 0:1 2:2\n-1 1:3\n")
    X, y = load_svmlight(p, zero_based=True, dtype=np.float32)
    assert X.dtype == np.float32 and X.shape == (2, 3)
    np.testing.assert_array_equal(X.toarray(), [[1, 0, 2], [0, 3, 0]])
    with pytest.raises(LibsvmFormatError, match=r"z\.txt, line 1: feature index 0 is not positive"):
        load_svmlight(p)


def test_file_like():
    with lzma.open(data_path("heart_scale")) as f:
        X, y = load_svmlight(f)
    X0, y0 = load_svmlight(data_path("heart_scale"))
    assert (X != X0).nnz == 0 and np.array_equal(y, y0)
    X, y = load_svmlight(io.BytesIO(b"1 1:2\n-1 2:3\n"))
    np.testing.assert_array_equal(X.toarray(), [[2, 0], [0, 3]])
    with pytest.raises(LibsvmFormatError, match=r"line 2: missing label"):
        load_svmlight(io.BytesIO(b"1 1:2\n2:3\n"))


def test_empty_file(tmp_path):
    p = tmp_path / "e.txt"
    p.write_bytes(b"# nothing\n\n")
    X, y = load_svmlight(p, n_features=4)
    assert X.shape == (0, 4) and y.shape == (0,)


# ---------------------------------------------------------------- malformed files

GOOD_HEAD = b"+1 1:0.5 2:1\n# a comment line\n\n-1 3:2\n"  # bad line goes on line 5

MALFORMED = {
    "no_colon": (b"-1 3:1 abc 5:1", "bad token 'abc'"),
    "two_colons": (b"-1 3:1:2", "bad token"),
    "empty_index": (b"-1 :2", "bad token"),
    "nonnumeric_index": (b"-1 a:1", "feature index 'a'"),
    "float_index": (b"-1 1.5:1", "feature index '1.5'"),
    "nonnumeric_value": (b"-1 3:x", "'x' is not a number"),
    "duplicate_index": (b"-1 3:1 3:2", "index 3 is not greater than the previous index 3"),
    "decreasing_index": (b"-1 5:1 3:2", "index 3 is not greater than the previous index 5"),
    "zero_index": (b"-1 0:1 3:2", "feature index 0 is not positive (indices are 1-based)"),
    "negative_index": (b"-1 -2:1", "feature index '-2'"),
    "missing_label": (b"3:1 4:1", "missing label"),
    "nonnumeric_label": (b"abc 3:1", "label 'abc' is not a number"),
    "nan_value": (b"-1 3:nan", "not finite"),
    "inf_value": (b"-1 3:-inf", "not finite"),
    "nan_label": (b"nan 3:1", "label 'nan' is not finite"),
    "inf_label": (b"inf 3:1", "label 'inf' is not finite"),
    "qid_not_after_label": (b"-1 3:1 qid:2", "feature index 'qid'"),
    "bad_qid": (b"-1 qid:x 3:1", "bad qid"),
    "control_byte": (b"-1 3:1\x01", "not a number"),
}


@pytest.mark.parametrize("case", MALFORMED, ids=list(MALFORMED))
def test_malformed(tmp_path, case):
    bad, reason = MALFORMED[case]
    p = tmp_path / f"bad_{case}.txt"
    p.write_bytes(GOOD_HEAD + bad + b"\n+1 1:1\n")
    with pytest.raises(LibsvmFormatError) as e:
        load_svmlight(p)
    assert str(e.value).startswith(f"bad_{case}.txt, line 5: ")
    assert reason in str(e.value)
    assert e.value.lineno == 5


@pytest.mark.parametrize("tail", [b"-1 3:1 5:", b"-1 3:1 5"], ids=["colon", "no_colon"])
def test_truncated_last_line(tmp_path, tail):
    p = tmp_path / "trunc.txt.gz"
    p.write_bytes(gzip.compress(GOOD_HEAD + tail))  # no final newline
    with pytest.raises(LibsvmFormatError, match=r"^trunc\.txt\.gz, line 5: .*'5:?'"):
        load_svmlight(p)


def test_error_deep_in_large_file(tmp_path, monkeypatch):
    """Line numbers stay right past the reader's internal chunks, and the first
    error wins even when a later line fails a different kind of check."""
    monkeypatch.setattr(libsvm, "_CHUNK", 1 << 18)  # a9a (2.3 MB) becomes ~9 chunks
    lines = lzma.decompress(data_path("a9a").read_bytes()).split(b"\n")
    lines[20000] = b"-1 3:oops"          # found only by the number parser
    lines[30000] = b"3:1 5:1"            # found by the structure check
    p = tmp_path / "big.txt"
    p.write_bytes(b"\n".join(lines))
    with pytest.raises(LibsvmFormatError, match=r"^big\.txt, line 20001: value of feature 3 'oo"):
        load_svmlight(p)
    lines[20000] = b"-1 3:1"
    p.write_bytes(b"\n".join(lines))
    with pytest.raises(LibsvmFormatError, match=r"^big\.txt, line 30001: missing label"):
        load_svmlight(p)
    lines[25000] = b"-1 7:1 6:1"         # found by the checks after parsing
    p.write_bytes(b"\n".join(lines))
    with pytest.raises(LibsvmFormatError, match=r"^big\.txt, line 25001: feature index 6"):
        load_svmlight(p)
    lines[30000] = lines[25000] = b"-1 3:1"
    p.write_bytes(b"\n".join(lines))
    X, y = load_svmlight(p)
    assert X.shape == (32561, 123)


@pytest.mark.parametrize("chunk", [None, 40], ids=["one_chunk", "tiny_chunks"])
def test_fuzz_against_reference(monkeypatch, chunk):
    """Random corruptions: the vectorized loader and the line-by-line reference
    (_parse_line) agree on either the parsed result or the first bad line."""
    if chunk:  # exercise the chunk boundaries / line offsets too
        monkeypatch.setattr(libsvm, "_CHUNK", chunk)
    rng = random.Random(0)
    base = lzma.decompress(data_path("heart_scale").read_bytes()).split(b"\n")[:8]
    base += [b"3 qid:4 1:1 5:2", b"", b"# x", b"-1 # y"]
    alphabet = b"0123456789:.-+ eE\tnaiqdfIN#x\r\n\x00\x01\xff"
    snippets = [b" qid:3", b" 99:1", b" 0:1", b"::", b"1e5", b" nan", b"inf", b"1e400", b"."]
    for trial in range(400):
        lines = list(base)
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(lines))
            s = bytearray(lines[i])
            j = rng.randrange(len(s) + 1)
            op = rng.random()
            if op < 0.4 and j < len(s):
                del s[j]
            elif op < 0.8:
                s.insert(j, rng.choice(alphabet))
            else:
                s[j:j] = rng.choice(snippets)
            lines[i] = bytes(s)
        data = b"\n".join(lines)
        zero_based = rng.random() < 0.3
        n_features = rng.choice([None, 13, 20])

        expect_err, rows = None, []
        for n, ln in enumerate(data.split(b"\n"), 1):
            try:
                parsed = _parse_line(ln.split(b"#")[0], zero_based, n_features)
            except ValueError as exc:
                expect_err = (n, str(exc))
                break
            if parsed is not None:
                rows.append(parsed)
        try:
            X, y, qid = load_svmlight(io.BytesIO(data), n_features=n_features,
                                      zero_based=zero_based, return_qid=True)
        except LibsvmFormatError as exc:
            assert expect_err == (exc.lineno, exc.reason), data
            continue
        assert expect_err is None, (expect_err, data)
        np.testing.assert_array_equal(y, [r[0] for r in rows])
        np.testing.assert_array_equal(qid, [r[1] or 0 for r in rows])
        dense = X.toarray()
        assert dense.shape[0] == len(rows)
        for r, (_, _, idx, vals) in zip(dense, rows):
            expected = np.zeros(X.shape[1])
            expected[np.array(idx, int) - (0 if zero_based else 1)] = vals
            np.testing.assert_array_equal(r, expected)


@pytest.mark.parametrize("suffix, compress", [(".xz", lzma.compress), (".gz", gzip.compress)])
def test_a_truncated_compressed_file_names_itself(tmp_path, suffix, compress):
    """Half of a compressed file: a LibsvmFormatError naming the file and the cause (a bare EOFError
    without a name before), and the whole file still reads."""
    data = compress(b"1 1:0.5 3:1.2\n-1 2:0.3\n" * 50)
    whole, half = tmp_path / f"whole.txt{suffix}", tmp_path / f"half.txt{suffix}"
    whole.write_bytes(data)
    half.write_bytes(data[: len(data) // 2])
    X, y = load_svmlight(whole)
    assert X.shape == (100, 3) and y.tolist()[:2] == [1.0, -1.0]
    with pytest.raises(LibsvmFormatError, match=rf"^half\.txt{suffix}: the \{suffix} data is truncated or corrupt") as e:
        load_svmlight(half)
    assert e.value.filename == f"half.txt{suffix}" and e.value.lineno is None
