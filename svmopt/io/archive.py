"""The safe reading layer under ``svmopt.model_io``: a model file's zip directory, its ``.npy``
members and its checksum, read with every size bounded before anything is decompressed.

A model file is a zip of ``.npy`` members (``np.savez``). Here it is opened only after its
central directory is known to be small, its members are checked by name, compression method
and flags, each member's declared size is matched against what its header entry implies, and
the members are streamed in chunks of ``CHUNK`` bytes: the payload is digested before any
array is allocated, then read (and digested again). ``svmopt.model_io`` holds the format's
schema; this module knows only which member names may occur.
"""
from __future__ import annotations

import hashlib
import hmac
import math
import os
import zipfile
from contextlib import contextmanager

import numpy as np

__all__ = ["ModelFileError", "FORMAT"]

FORMAT = "svmopt-model"
"""The header's "format" value."""
CHUNK = 1 << 20  # bytes streamed at a time
MAX_NPY_HEADER = 4096  # a .npy member's own header (numpy writes 64 or 128 bytes)
MAX_DIRECTORY = 1 << 16  # zip central directory bytes (a dozen entries need ~1 KB)


class ModelFileError(ValueError):
    """An unreadable, foreign, too new, tampered or corrupted model file; names the file."""

    def __init__(self, path, reason: str):
        super().__init__(f"model file '{path}': {reason}")
        self.path, self.reason = str(path), reason

    def __reduce__(self):  # picklable (e.g. across multiprocessing) despite 2 arguments
        return type(self), (self.path, self.reason)


# --------------------------------------------------------------------------- checksum


def hasher(key):
    """SHA-256, or HMAC-SHA256 with ``key`` (bytes or str)."""
    if key is None:
        return hashlib.sha256()
    return hmac.new(key.encode() if isinstance(key, str) else bytes(key), digestmod=hashlib.sha256)


def tag(name, dtype: str, shape) -> bytes:
    # A 0-d array is tagged (1,): version 1 defined the payload with np.ascontiguousarray's shape.
    return f"\n{name}|{dtype}|{tuple(shape) or (1,)}\n".encode()


def digest(header_bytes: bytes, arrays: dict, key) -> str:
    """Hex SHA-256 (HMAC with ``key``) of the payload: header, then each array's tag and bytes."""
    h = hasher(key)
    h.update(header_bytes)
    for name in sorted(arrays):
        a = np.asarray(arrays[name], order="C")
        h.update(tag(name, a.dtype.str, a.shape))
        h.update(a.reshape(-1).view(np.uint8))
    return h.hexdigest()


# --------------------------------------------------------------------------- zip layer


@contextmanager
def zip_errors(path):
    """The zip and .npy layers' failures, whatever their type, mean a damaged file."""
    try:
        yield
    except (ModelFileError, MemoryError):
        raise
    except Exception as exc:
        raise ModelFileError(path, f"tampered or corrupted ({type(exc).__name__}: {exc})") from None


def open_archive(path, f, max_entries: int) -> zipfile.ZipFile:
    """The binary file ``f`` as a ``ZipFile``, once its directory is known to be small
    (at most ``max_entries`` entries in ``MAX_DIRECTORY`` bytes)."""
    head = f.read(4)
    if head != b"PK\x03\x04":
        raise ModelFileError(path, f"not an svmopt model file (expected a '{FORMAT}' .npz archive)")
    # zipfile reads the whole central directory and makes an object per entry: bound it first.
    # It is found through the 22-byte end record (save_model writes no zip comment) and, for
    # archives over 4 GiB, the zip64 record that a 20-byte locator before it points to.
    size = f.seek(0, os.SEEK_END)
    f.seek(max(size - 42, 0))
    tail = f.read()
    end = tail[-22:]
    if len(end) < 22 or end[:4] != b"PK\x05\x06" or end[20:22] != b"\0\0":
        raise ModelFileError(path, "tampered or corrupted (the file does not end with a zip end record; "
                                   "save_model writes no zip comment)")
    counts = [int.from_bytes(end[8:10], "little"), int.from_bytes(end[10:12], "little")]
    cd_size = int.from_bytes(end[12:16], "little")
    if tail[-42:-38] == b"PK\x06\x07":  # zip64 locator
        f.seek(int.from_bytes(tail[-34:-26], "little"))
        rec = f.read(56)
        if rec[:4] == b"PK\x06\x06":
            counts += [int.from_bytes(rec[24:32], "little"), int.from_bytes(rec[32:40], "little")]
            cd_size = max(cd_size, int.from_bytes(rec[40:48], "little"))
    if max(counts) > max_entries or cd_size > MAX_DIRECTORY:
        raise ModelFileError(path, f"tampered or corrupted (its zip directory lists {max(counts)} entries "
                                   f"in {cd_size} bytes; a model has at most {max_entries})")
    f.seek(0)
    with zip_errors(path):
        return zipfile.ZipFile(f)


def check_members(path, zf, names) -> dict:
    """{member name without '.npy': ZipInfo}: ``names``, "header" and "checksum" only, once
    each, stored or deflated, not encrypted. Reads nothing but the directory."""
    infos = zf.infolist()
    if "header.npy" not in [i.filename for i in infos]:
        raise ModelFileError(path, f"not an svmopt model file (no header; expected a '{FORMAT}' archive)")
    members = {}
    for info in infos:
        name = info.filename[:-4] if info.filename.endswith(".npy") else None
        problem = None
        if name not in names and name not in ("header", "checksum"):
            problem = f"unexpected member '{info.filename}'"
        elif name in members:
            problem = f"member '{info.filename}' appears twice"
        elif info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            problem = f"member '{info.filename}' uses zip compression method {info.compress_type}"
        elif info.flag_bits & ~0x080E:  # allowed: deflate options, data descriptor, UTF-8 name
            problem = f"member '{info.filename}' has zip flags {info.flag_bits:#x} (encrypted or unsupported)"
        if problem:
            raise ModelFileError(path, f"tampered or corrupted ({problem})")
        members[name] = info
    if "checksum" not in members:
        raise ModelFileError(path, "tampered or corrupted (no checksum member)")
    return members


def least_data_bytes(members: dict) -> int:
    """A lower bound, from the zip directory alone, on the array bytes the members hold: each
    declares its data plus a .npy header of at most ``MAX_NPY_HEADER`` bytes (``check_size``)."""
    return sum(max(info.file_size - MAX_NPY_HEADER, 0) for name, info in members.items()
               if name not in ("header", "checksum"))


def check_size(path, info, nbytes, dtype, shape):
    """A member's declared uncompressed size: its data plus a .npy header of bounded length."""
    if not nbytes + 10 <= info.file_size <= nbytes + MAX_NPY_HEADER:
        raise ModelFileError(path, f"tampered or corrupted (member '{info.filename}' declares "
                                   f"{info.file_size} bytes; {dtype.str} {tuple(shape)} needs {nbytes} "
                                   "plus a .npy header)")


@contextmanager
def npy(path, zf, info):
    """Open one member, read its .npy header; yields (stream at the data, dtype, shape).

    The caller has bounded ``info.file_size``; here the .npy header must account for it exactly.
    """
    fmt = np.lib.format
    with zip_errors(path):
        fp = zf.open(info)
    with fp:
        with zip_errors(path):
            version = fmt.read_magic(fp)
            if version not in ((1, 0), (2, 0)):
                raise ModelFileError(path, f"tampered or corrupted (member '{info.filename}' is .npy "
                                           f"version {version})")
            # numpy reads a header of the length the file states before comparing it with
            # max_header_size: look at that length first.
            length = int.from_bytes(fp.read(2 if version == (1, 0) else 4), "little")
            if length > MAX_NPY_HEADER:
                raise ModelFileError(path, f"tampered or corrupted (member '{info.filename}' states a "
                                           f".npy header of {length} bytes)")
            fp.seek(0)
            fmt.read_magic(fp)
            read = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
            shape, fortran, dtype = read(fp, max_header_size=MAX_NPY_HEADER)
            at = fp.tell()
        if fortran or dtype.hasobject or at + dtype.itemsize * math.prod(shape) != info.file_size:
            raise ModelFileError(path, f"tampered or corrupted (member '{info.filename}': .npy header "
                                       f"{dtype.str} {shape}{' Fortran order' if fortran else ''} does not "
                                       f"match its {info.file_size} bytes)")
        yield fp, dtype, shape


def read_data(path, fp, info, nbytes, sink):
    """Pass the member's ``nbytes`` data bytes to ``sink(offset, chunk)`` a chunk at a time
    (zipfile checks the CRC as the last byte is read)."""
    done = 0
    while done < nbytes:
        with zip_errors(path):
            chunk = fp.read(min(CHUNK, nbytes - done))
        if not chunk:
            raise ModelFileError(path, f"tampered or corrupted (member '{info.filename}' ends early)")
        sink(done, chunk)
        done += len(chunk)


def small_member(path, zf, members, name, limit) -> bytes:
    """The bytes of the uint8 vector ``name`` (at most ``limit`` of them)."""
    info = members[name]
    if info.file_size > limit + MAX_NPY_HEADER:
        raise ModelFileError(path, f"tampered or corrupted (member '{info.filename}' declares {info.file_size} "
                                   f"bytes; at most {limit} expected)")
    with npy(path, zf, info) as (fp, dtype, shape):
        if dtype != np.uint8 or len(shape) != 1:
            raise ModelFileError(path, f"tampered or corrupted (member '{info.filename}' is {dtype.str} {shape}, "
                                       "expected a uint8 vector)")
        parts = []
        read_data(path, fp, info, shape[0], lambda at, chunk: parts.append(chunk))
    return b"".join(parts)


def scan(path, zf, members, declared, hb, key, keep):
    """Digest the payload streaming the members; with ``keep``, also read the arrays.

    declared: {name: (dtype, shape)}, each member's size already checked (``check_size``).
    Returns (hex digest, {name: array} or {} without ``keep``).
    """
    h = hasher(key)
    h.update(hb)
    arrays = {}
    for name in sorted(declared):
        dtype, shape = declared[name]
        h.update(tag(name, dtype.str, shape))
        info = members[name]
        with npy(path, zf, info) as (fp, got, got_shape):
            if got.str != dtype.str or got_shape != shape:
                raise ModelFileError(path, f"tampered or corrupted (member '{info.filename}' holds {got.str} "
                                           f"{got_shape}, the header says {dtype.str} {shape})")
            flat = None
            if keep:
                arrays[name] = np.empty(shape, dtype)
                flat = arrays[name].reshape(-1).view(np.uint8)

            def sink(at, chunk, flat=flat):
                h.update(chunk)
                if flat is not None:
                    flat[at:at + len(chunk)] = np.frombuffer(chunk, np.uint8)

            read_data(path, fp, info, dtype.itemsize * math.prod(shape), sink)
    return h.hexdigest(), arrays
