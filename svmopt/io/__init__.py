"""File input/output: LIBSVM / svmlight text format (pure numpy/scipy)."""
from .libsvm import LibsvmFormatError, dump_svmlight, load_svmlight

__all__ = ["LibsvmFormatError", "load_svmlight", "dump_svmlight"]
