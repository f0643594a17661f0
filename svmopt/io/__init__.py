"""File input/output: LIBSVM / svmlight data files, LIBLINEAR model files (pure numpy/scipy)."""
from .libsvm import LibsvmFormatError, dump_svmlight, load_svmlight
from .liblinear_model import is_liblinear_model, load_liblinear_model, save_liblinear_model

__all__ = ["LibsvmFormatError", "load_svmlight", "dump_svmlight", "save_liblinear_model", "load_liblinear_model",
           "is_liblinear_model"]
