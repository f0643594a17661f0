"""Read and write LIBSVM / svmlight text files with numpy and scipy only.

Format, one sample per line::

    <label> [qid:<int>] <index>:<value> <index>:<value> ...  [# comment]

Indices are 1-based (as LIBSVM) unless ``zero_based=True`` and must strictly
increase within a line. Everything after ``#`` is a comment; lines that are
blank (after removing comments) are skipped and produce no row. Explicit zeros
written in the file (``13:0.0``) are kept as stored entries of the CSR matrix,
so ``X.nnz`` equals the number of ``index:value`` tokens.

The reader streams and is vectorized: it takes the (decompressed) text a few MB
at a time, finds token and line boundaries with numpy on the byte buffer, parses
all numbers by ``np.fromstring`` and appends the rows to compact arrays, so its
peak memory is the result plus a few chunks. Python only looks at individual lines
once the vectorized checks have found a problem, to say precisely what and where.

What it guarantees: a file loads only if every line is well formed, and then the
numbers are exactly what the text says (values and labels as Python's ``float``
reads them; indices and qids as exact integers). Feature indices give int32
column indices (at most 2**31 - 1 columns, what scipy and the solvers index
with); qids fit in int64. Any other file raises ``LibsvmFormatError`` naming the
file and the first bad line, on every supported numpy (numpy < 2 stops parsing
silently at unreadable text where numpy 2 raises; the reader notices both).
"""
from __future__ import annotations

import bz2
import gzip
import io
import lzma
import math
import os
import re
import zlib
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import scipy.sparse as sp

__all__ = ["LibsvmFormatError", "load_svmlight", "dump_svmlight"]

_OPENERS = {".xz": lzma.open, ".lzma": lzma.open, ".bz2": bz2.open, ".gz": gzip.open}

# Tabs, CR (Windows line ends), VT and FF become spaces; '\n' separates lines.
_WS_TO_SPACE = bytes.maketrans(b"\t\r\x0b\x0c", b"    ")
_COLON_TO_SPACE = bytes.maketrans(b":", b" ")
_COMMENT = re.compile(rb"#[^\n]*")
# What np.fromstring accepts as a number; the Python checker must agree with it.
_FLOAT = re.compile(rb"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_NONFINITE = re.compile(rb"[+-]?(?:nan|inf|infinity)", re.IGNORECASE)
_DIGITS = re.compile(rb"\d+")
_MAX_COLUMNS = 2**31 - 1  # int32 column indices; also exact as float64, which parses them
_MAX_QID = 2**63 - 1
_MAX_INT32 = 2**31 - 1  # the most entries int32 row pointers (and scipy's int32 indices) allow
_CHUNK = 1 << 18  # bytes parsed at a time (rounded up to a whole line); _parse needs ~30x that


class LibsvmFormatError(ValueError):
    """A malformed LIBSVM file; the message reads ``'<file>, line <n>: <reason>'`` (``'<file>:
    <reason>'`` where no line is to blame: a truncated or corrupt compressed file).

    Attributes ``filename``, ``lineno`` (1-based, or None) and ``reason`` hold the parts.
    """

    def __init__(self, filename: str, lineno: int | None, reason: str):
        super().__init__(f"{filename}, line {lineno}: {reason}" if lineno is not None else f"{filename}: {reason}")
        self.filename, self.lineno, self.reason = filename, lineno, reason

    def __reduce__(self):  # picklable (e.g. across multiprocessing) despite 3 arguments
        return type(self), (self.filename, self.lineno, self.reason)


# --------------------------------------------------------------------------- reading


def _numbers(text: bytes, count: int):
    """The ``count`` whitespace-separated numbers of ``text``, or None if they are not that.

    numpy 2 raises on unparseable text; numpy 1 stops there with only a warning. A
    sentinel number at the end makes the second case visible too: it goes missing.
    """
    try:
        fields = np.fromstring(text + b" 0", sep=" ")
    except ValueError:
        return None
    return fields[:-1] if len(fields) == count + 1 else None


def _integer(digits: bytes) -> int:
    """A digit string's exact value; 2**64 for longer ones (int() refuses > 4300 digits)."""
    d = digits.lstrip(b"0")
    return int(d or b"0") if len(d) <= 20 else 2**64


def _show(tok: bytes) -> str:
    text = tok.decode(errors="replace")
    return repr(text if len(text) <= 40 else text[:40] + "...")


def _number(tok: bytes, what: str) -> float:
    if _FLOAT.fullmatch(tok):
        v = float(tok)
        if math.isfinite(v):
            return v
    elif not _NONFINITE.fullmatch(tok):
        raise ValueError(f"{what} {_show(tok)} is not a number")
    raise ValueError(f"{what} {_show(tok)} is not finite")


def _parse_line(line: bytes, zero_based: bool = False, n_features: int | None = None):
    """Parse one line (comment already removed) the slow, obviously-correct way.

    Returns None for a blank line, else ``(label, qid or None, indices, values)``.
    Raises ValueError with the reason on any problem. The vectorized reader
    calls this only to explain an error, and the tests use it as a reference.
    """
    toks = line.split()
    if not toks:
        return None
    if b":" in toks[0]:
        raise ValueError(f"missing label (line starts with {_show(toks[0])})")
    label = _number(toks[0], "label")
    qid = None
    if len(toks) > 1 and toks[1].startswith(b"qid:"):
        if not _DIGITS.fullmatch(toks[1][4:]):
            raise ValueError(f"bad qid token {_show(toks[1])}")
        qid = _integer(toks[1][4:])
        if qid > _MAX_QID:
            raise ValueError(f"qid {_show(toks[1][4:])} is out of range (int64: at most 2**63 - 1)")
        toks = toks[1:]
    indices, values = [], []
    for tok in toks[1:]:
        parts = tok.split(b":")
        if len(parts) != 2 or not parts[0]:
            raise ValueError(f"bad token {_show(tok)} (expected index:value)")
        if not parts[1]:
            raise ValueError(f"missing value in {_show(tok)} (truncated line?)")
        if not _DIGITS.fullmatch(parts[0]):
            raise ValueError(f"feature index {_show(parts[0])} is not a non-negative integer")
        idx = _integer(parts[0])
        if idx == 0 and not zero_based:
            raise ValueError("feature index 0 is not positive (indices are 1-based)")
        if indices and idx <= indices[-1]:
            raise ValueError(f"feature index {idx} is not greater than the previous "
                             f"index {indices[-1]} (indices must increase within a line)")
        if idx > (_MAX_COLUMNS if n_features is None else n_features) - 1 + (not zero_based):
            raise ValueError(f"feature index {_show(parts[0])} is out of range " + (
                f"(n_features={n_features})" if n_features is not None
                else f"(at most {_MAX_COLUMNS} columns: column indices are int32)"))
        values.append(_number(parts[1], f"value of feature {idx}"))
        indices.append(idx)
    return label, qid, indices, values


def _raise_at(data, name, line_starts, first_line, zero_based, n_features):
    """Scan lines from ``first_line`` in Python and raise at the first bad one."""
    for i in range(first_line, len(line_starts)):
        end = line_starts[i + 1] - 1 if i + 1 < len(line_starts) else len(data)
        try:
            _parse_line(data[line_starts[i]:end], zero_based, n_features)
        except ValueError as e:
            raise LibsvmFormatError(name, i + 1, str(e)) from None
    # Only reachable if the fast checks and _parse_line disagree (a bug here).
    raise LibsvmFormatError(name, first_line + 1, "could not parse the file")


def _first_min(*arrays):
    return min((int(a.min()) for a in arrays if len(a)), default=None)


def _parse(data, name, zero_based, n_features, dtype):
    """Vectorized parse of one chunk ``data`` (comments removed, whitespace
    normalized, whole lines). Returns ``(labels, qid or None, entries per row,
    column of each entry, values)``; line numbers in errors are chunk-relative.

    The checks below find bad lines, but the number parser cannot say where it
    failed and a structural error may hide an earlier bad number, so those two
    cases rescan the chunk in Python from its start (cheap: chunks are small).
    """
    buf = np.frombuffer(data, np.uint8)
    line_starts = np.concatenate(([0], np.flatnonzero(buf == 10) + 1))

    def fail(first_line=0):
        _raise_at(data, name, line_starts, int(first_line), zero_based, n_features)

    # Tokens are runs of bytes > 32 (all whitespace is <= 32; any other control
    # byte makes the number parser fail below, so it cannot slip through).
    edges = np.flatnonzero(np.diff(np.concatenate(([False], buf > 32, [False]))))
    ts, te = edges[0::2], edges[1::2]  # token k is data[ts[k]:te[k]]
    line = np.searchsorted(line_starts, ts, "right") - 1  # 0-based line of each token
    first = np.ones(len(ts), bool)  # first token of a line = the label
    first[1:] = line[1:] != line[:-1]

    # Structure: a label has no ':', every other token has one with text on both sides.
    colons = np.flatnonzero(buf == 58)
    c0 = np.searchsorted(colons, ts)
    ncolon = np.searchsorted(colons, te) - c0
    pair = ~first & (ncolon == 1)
    bad = (first & (ncolon != 0)) | (~first & (ncolon != 1))
    cp = colons[np.minimum(c0, len(colons) - 1)] if len(colons) else np.zeros_like(ts)
    bad |= pair & ((cp == ts) | (cp == te - 1))
    # qid:N is only allowed right after the label.
    is_qid = pair & (cp - ts == 3)
    k = np.flatnonzero(is_qid)
    is_qid[k] = ((buf[ts[k]] == ord("q")) & (buf[ts[k] + 1] == ord("i"))
                 & (buf[ts[k] + 2] == ord("d")))
    bad |= is_qid & ~np.concatenate(([False], first[:-1]))
    feat = pair & ~is_qid
    # Indices and qid values must be digit strings: mark their byte ranges with
    # +1/-1 steps, integrate, and look for non-digits inside. (Bad tokens are
    # left out, their ranges could be empty and break the integration.)
    gf, gq = feat & ~bad, is_qid & ~bad
    step = np.zeros(len(buf) + 1, np.int8)
    step[ts[gf]], step[cp[gf]] = 1, -1
    step[cp[gq] + 1], step[te[gq]] = 1, -1
    inside = np.cumsum(step[:-1], dtype=np.int8).view(bool)
    nondigit = inside & ((buf - 48) > 9)
    if bad.any() or nondigit.any() or b"\x00" in data:  # (np.fromstring stops at NUL)
        fail()

    # Parse all numbers at once: with ':' -> ' ' and 'qid' -> '0  ' the text is a
    # flat list of numbers, one per label and two per index:value or qid token.
    text = data.translate(_COLON_TO_SPACE)
    if is_qid.any():
        t = np.frombuffer(text, np.uint8).copy()
        q = ts[is_qid]
        t[q], t[q + 1], t[q + 2] = ord("0"), 32, 32
        text = t.tobytes()
    nfield = np.where(first, 1, 2)
    fields = _numbers(text, int(nfield.sum()))
    if fields is None:
        fail()
    at = np.cumsum(nfield) - nfield  # position of each token's first number in fields

    y, idx, val = fields[at[first]], fields[at[feat]], fields[at[feat] + 1]
    fline = line[feat]
    lo = 0 if zero_based else 1
    hi = (_MAX_COLUMNS if n_features is None else n_features) - 1 + lo
    same_line = np.concatenate(([False], fline[1:] == fline[:-1]))
    not_increasing = same_line & (idx <= np.concatenate(([np.inf], idx[:-1])))
    # qids of more than 15 digits may lose some as float64: read those again exactly
    qpos = np.flatnonzero(is_qid)
    long = te[qpos] - cp[qpos] - 1 > 15
    qval = np.where(long, 0, fields[at[qpos] + 1]).astype(np.int64)
    long = np.flatnonzero(long)
    exact = [_integer(data[cp[qpos[k]] + 1:te[qpos[k]]]) for k in long]
    overflow = [k for k, v in zip(long, exact) if v > _MAX_QID]
    bad_line = _first_min(line[first][~np.isfinite(y)], fline[~np.isfinite(val)],
                          fline[(idx < lo) | (idx > hi) | not_increasing], line[qpos[overflow]])
    if bad_line is not None:
        fail(bad_line)  # exact: every line before it passed every check
    qval[long] = np.array(exact, np.int64)

    row_of = np.cumsum(first) - 1  # row of each token
    qid = None
    if len(qpos):
        qid = np.zeros(len(y), np.int64)
        qid[row_of[qpos]] = qval
    cols = idx.astype(np.int32) - lo
    counts = np.bincount(row_of[feat], minlength=len(y))
    return y, qid, counts, cols, val.astype(dtype, copy=False)


def _shard_bounds(f, size: int, index: int, count: int):
    """Byte range [start, end) of part ``index`` of ``count``: the lines that start in its share."""
    def line_start(b):  # the first line start at or after byte b
        if b <= 0:
            return 0
        f.seek(b - 1)
        pos = b - 1
        while True:
            block = f.read(1 << 16)
            if not block:
                return size
            i = block.find(b"\n")
            if i >= 0:
                return pos + i + 1
            pos += len(block)
    return line_start(index * size // count), line_start((index + 1) * size // count)


def _lines_before(f, start: int) -> int:
    f.seek(0)
    lines, left = 0, start
    while left > 0:
        block = f.read(min(left, 1 << 22))
        if not block:
            break
        lines += block.count(b"\n")
        left -= len(block)
    return lines


def _name(source) -> str:
    """A short name for error messages."""
    if hasattr(source, "read"):
        return Path(str(getattr(source, "name", "<stream>"))).name
    return Path(os.fspath(source)).name


@contextmanager
def _decompression_errors(name, suffix):
    """A compressed file's truncation or corruption, raised as LibsvmFormatError naming it
    (suffix None: a file-like object, whose errors are its own)."""
    if suffix is None:
        yield
        return
    try:
        yield
    except (EOFError, lzma.LZMAError, zlib.error, gzip.BadGzipFile) as exc:
        raise LibsvmFormatError(name, None, f"the {suffix} data is truncated or corrupt ({exc})") from exc
    except OSError as exc:
        if suffix == ".bz2" and "data stream" in str(exc).lower():  # bz2 reports a bad stream as OSError
            raise LibsvmFormatError(name, None, f"the .bz2 data is corrupt ({exc})") from exc
        raise


def _check_shard(shard):
    if not (isinstance(shard, tuple) and len(shard) == 2 and all(isinstance(v, (int, np.integer)) for v in shard)
            and 0 <= shard[0] < shard[1]):
        raise ValueError(f"shard must be (index, count) with 0 <= index < count, got {shard!r}")
    return int(shard[0]), int(shard[1])


@contextmanager
def _text(source, shard):
    """Open ``source`` for streaming: yields ``(read, name, lines_before)``.

    ``read(n)`` returns the next at most ``n`` bytes of (decompressed) text, b"" at the end,
    compression errors raised as LibsvmFormatError; with ``shard`` only that part's bytes.
    ``lines_before()`` counts the lines before the part (0 without ``shard``), for messages.
    """
    own = not hasattr(source, "read")
    if own:
        path = os.fspath(source)
        suffix = Path(path).suffix.lower()
        f = _OPENERS.get(suffix, open)(path, "rb")
    else:
        f, suffix = source, None
    name = _name(source)
    try:
        start, left = 0, None
        if shard is not None:
            index, count = _check_shard(shard)
            if not (hasattr(f, "seekable") and f.seekable()):  # the byte ranges need the size: hold it all
                data = f.read()
                f, own = io.BytesIO(data.encode() if isinstance(data, str) else data), True
            with _decompression_errors(name, suffix):
                size = f.seek(0, 2)
                start, end = _shard_bounds(f, size, index, count)
                f.seek(start)
            left = end - start

        def read(n):
            nonlocal left
            if left is not None:
                n = min(n, left)
                if n <= 0:
                    return b""
            with _decompression_errors(name, suffix):
                block = f.read(n)
            if isinstance(block, str):
                block = block.encode()
            if left is not None:
                left -= len(block)
            return block

        def lines_before():
            if start == 0:
                return 0
            with _decompression_errors(name, suffix):
                return _lines_before(f, start)

        yield read, name, lines_before
    finally:
        if own:
            f.close()


def _line_chunks(read):
    """The text as chunks of whole lines, each ``_CHUNK`` bytes read plus the rest of its
    last line (the last chunk may lack a final newline)."""
    carry = []  # the start of a line that the previous reads cut
    while True:
        block = read(_CHUNK)
        if not block:
            if carry:
                yield b"".join(carry)
            return
        cut = block.rfind(b"\n") + 1
        if cut == 0:
            carry.append(block)
            continue
        if carry or cut < len(block):
            carry.append(memoryview(block)[:cut])
            chunk = b"".join(carry)
            carry = [block[cut:]] if cut < len(block) else []
        else:
            chunk = block
        yield chunk


class _Growing:
    """A 1-D array filled by appending. It grows in place by 1/8 at a time through numpy's
    resize, whose realloc remaps the pages of a large block instead of copying them: the peak
    stays within 1/8 of the data, where a list of parts and a final concatenate hold it twice."""

    def __init__(self, dtype):
        self.a, self.n = np.empty(1 << 12, dtype), 0

    def append(self, x):
        end = self.n + len(x)
        if end > len(self.a):
            # refcheck=False: no view of self.a exists until done() hands it out
            self.a.resize(max(end, len(self.a) + (len(self.a) >> 3)), refcheck=False)
        self.a[self.n:end] = x
        self.n = end

    def done(self) -> np.ndarray:
        self.a.resize(self.n, refcheck=False)
        return self.a


class _Rows:
    """The CSR parts of the rows parsed so far, kept compact: int32 column indices, values
    in the requested dtype, int32 row pointers until the entries outgrow them."""

    def __init__(self, dtype, qid):
        self.y, self.cols, self.val = _Growing(np.float64), _Growing(np.int32), _Growing(dtype)
        self.indptr = _Growing(np.int32)
        self.indptr.append(np.zeros(1, np.int32))
        self.qid = _Growing(np.int64) if qid else None
        self.nnz, self.width = 0, 0

    def add(self, y, qid, counts, cols, val):
        ends = np.cumsum(counts) + self.nnz
        if len(cols) and self.indptr.a.dtype == np.int32 and ends[-1] > _MAX_INT32:
            self.indptr.a = self.indptr.a.astype(np.int64)  # once, past 2**31 - 1 entries
        self.indptr.append(ends)
        self.nnz += len(cols)
        self.y.append(y)
        self.cols.append(cols)
        self.val.append(val)
        if self.qid is not None:
            self.qid.append(np.zeros(len(y), np.int64) if qid is None else qid)
        if len(cols):
            self.width = max(self.width, int(cols.max()) + 1)

    def csr(self, n_features):
        """(X, y, qid or None); the parts are handed over, not copied (scipy keeps int32 indices)."""
        y, val, cols, indptr = self.y.done(), self.val.done(), self.cols.done(), self.indptr.done()
        if indptr.dtype != np.int32:  # scipy needs indices and indptr of one type
            cols = cols.astype(np.int64)
        X = sp.csr_matrix((val, cols, indptr), shape=(len(y), self.width if n_features is None else n_features))
        X.has_sorted_indices = True  # checked in _parse: indices strictly increase per row
        return X, y, None if self.qid is None else self.qid.done()


def load_svmlight(path, n_features=None, dtype=np.float64, zero_based=False, return_qid=False, shard=None):
    """Load a LIBSVM / svmlight file.

    The text is read and parsed ``_CHUNK`` bytes (256 KiB) at a time, the rows appended in
    place: the peak memory is the returned arrays, up to 1/8 more while they grow, and the
    parser's temporaries (~30 times a chunk, ~8 MiB). A shard of a stream that cannot seek
    is read whole first.

    Parameters
    ----------
    path : str, os.PathLike or binary file-like object
        ``.xz``, ``.lzma``, ``.bz2`` and ``.gz`` paths are decompressed by
        extension; any other path is read as plain text. A file-like object
        must yield the (uncompressed) bytes.
    n_features : int, optional
        Number of columns. Default: the largest index seen (1-based), i.e.
        ``max index + 1`` when ``zero_based``. An index beyond it is an error.
    dtype : numpy dtype of ``X.data`` (default float64).
    zero_based : bool
        If False (LIBSVM convention) index ``i`` is column ``i - 1`` and index 0
        is an error; if True index ``i`` is column ``i``.
    return_qid : bool
        Also return the ``qid:N`` values (int64, 0 for rows without qid).
        When False, qid tokens are accepted and ignored.
    shard : (index, count), optional
        Read only part ``index`` of ``count``: the file's bytes are cut into ``count``
        equal ranges, and a part holds the lines that start in its range (every line
        belongs to exactly one part; a part may be empty). For several hosts:
        ``shard=(jax.process_index(), jax.process_count())``, then
        ``svmopt.shard_rows(X, y, process_local=True)``. A plain file is read from the
        part's start; a compressed one is decompressed as a stream (what lies before the
        part is not kept). Errors give the line's number in the whole file. Without
        ``n_features`` the width is the part's own largest index (``shard_rows`` takes
        the largest over the processes).

    Returns
    -------
    X : scipy.sparse.csr_matrix, shape (n_rows, n_features), sorted indices
        (int32 indices and indptr up to 2**31 - 1 entries, int64 beyond)
    y : ndarray float64, shape (n_rows,)
    qid : ndarray int64, shape (n_rows,), only if ``return_qid``

    Raises
    ------
    LibsvmFormatError
        On any malformed line; the message names the file and the 1-based line.
    """
    if n_features is not None and (isinstance(n_features, bool) or not isinstance(n_features, (int, np.integer))):
        raise TypeError(f"n_features must be an integer (the number of columns) or None, got "
                        f"{type(n_features).__name__} {n_features!r}")
    if n_features is not None and not 0 <= n_features <= _MAX_COLUMNS:
        raise ValueError(f"n_features must be in [0, {_MAX_COLUMNS}] (int32 column indices), got {n_features}")
    if shard is not None:
        _check_shard(shard)
    rows = _Rows(dtype, return_qid)
    with _text(path, shard) as (read, name, lines_before):
        # Chunks of whole lines: the temporaries (~30x the chunk) stay small and cache-friendly,
        # and an error rescans at most one chunk.
        line0 = 0
        for chunk in _line_chunks(read):
            lines = chunk.count(b"\n")
            if b"#" in chunk:
                chunk = _COMMENT.sub(b"", chunk)  # keeps the '\n', so line numbers hold
            chunk = chunk.translate(_WS_TO_SPACE)
            try:
                parsed = _parse(chunk, name, zero_based, n_features, dtype)
            except LibsvmFormatError as e:
                raise LibsvmFormatError(name, lines_before() + line0 + e.lineno, e.reason) from None
            rows.add(*parsed)
            line0 += lines
    X, y, qid = rows.csr(n_features)
    return (X, y, qid) if return_qid else (X, y)


# --------------------------------------------------------------------------- writing


def dump_svmlight(X, y, path, zero_based=False, qid=None):
    """Write ``X`` (dense or sparse, shape (n, d)) and labels ``y`` (shape (n,)).

    Only non-zeros are written, with increasing indices (1-based unless
    ``zero_based``), values and labels as ``%.17g`` so that reading back gives
    the exact same float64 numbers (integers come out as ``1``, ``-1``, ``3``).
    ``qid`` (ints, shape (n,)) adds ``qid:N`` after each label. ``path`` ending
    in .xz/.lzma/.bz2/.gz is compressed; a binary file-like object also works.
    """
    X = sp.csr_matrix(X, dtype=np.float64, copy=True)  # copy: we canonicalize in place
    X.sum_duplicates()  # also sorts the indices
    X.eliminate_zeros()
    y = np.asarray(y, np.float64).ravel()
    n = X.shape[0]
    if len(y) != n:
        raise ValueError(f"y has {len(y)} entries but X has {n} rows")
    if not (np.isfinite(X.data).all() and np.isfinite(y).all()):
        raise ValueError("X and y must be finite (the format has no NaN/inf)")
    if qid is not None:
        qid = np.asarray(qid, np.int64).ravel()
        if len(qid) != n:
            raise ValueError(f"qid has {len(qid)} entries but X has {n} rows")
    head = "%.17g qid:%d" if qid is not None else "%.17g"
    h = 1 if qid is None else 2  # numbers in a line's head
    off = 0 if zero_based else 1

    if hasattr(path, "write"):
        _write_rows(path, X, y, qid, head, h, off)
    else:
        opener = _OPENERS.get(Path(os.fspath(path)).suffix.lower(), open)
        with opener(path, "wb") as f:
            _write_rows(f, X, y, qid, head, h, off)


def _write_rows(f, X, y, qid, head, h, off, block=20000):
    # One '%' format per block of rows: Python loops over rows, never over entries.
    for r0 in range(0, X.shape[0], block):
        r1 = min(r0 + block, X.shape[0])
        p0, p1 = X.indptr[r0], X.indptr[r1]
        counts = np.diff(X.indptr[r0:r1 + 1])
        fmt = "".join(head + " %d:%.17g" * int(c) + "\n" for c in counts)
        args = np.empty(h * (r1 - r0) + 2 * (p1 - p0), dtype=object)
        # Row r's head sits at h*r + 2*indptr[r]; entry j at h*(row(j)+1) + 2*j.
        starts = h * np.arange(r1 - r0) + 2 * (X.indptr[r0:r1] - p0)
        args[starts] = y[r0:r1]
        if qid is not None:
            args[starts + 1] = qid[r0:r1]
        pos = h * np.repeat(np.arange(1, r1 - r0 + 1), counts) + 2 * np.arange(p1 - p0)
        args[pos] = X.indices[p0:p1].astype(np.int64) + off
        args[pos + 1] = X.data[p0:p1]
        f.write((fmt % tuple(args.tolist())).encode())
