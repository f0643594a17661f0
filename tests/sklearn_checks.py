"""scikit-learn's estimator checks as the estimators' tests use them: the protocol checks that need no
fit (fast, the heart of the conventions), the expected failures an iterative solver shares with
scikit-learn's own LinearSVC / LinearSVR / OneClassSVM, and the failures of a full check_estimator run."""
from sklearn.utils import estimator_checks

PROTOCOL_CHECKS = [
    "check_parameters_default_constructible",
    "check_no_attributes_set_in_init",
    "check_get_params_invariance",
    "check_set_params",
    "check_estimators_unfitted",
    "check_estimators_empty_data_messages",
    "check_estimator_repr",
    "check_estimator_cloneable",
]

# An iterative solver stopped at its tolerance is not equal to 1e-7 to a refit on repeated rows;
# scikit-learn lists these two as expected failures of its own LinearSVR and OneClassSVM.
SAMPLE_WEIGHT_EXPECTED = {
    "check_sample_weight_equivalence_on_dense_data": "iterative solver: equal to its tolerance, not to 1e-7",
    "check_sample_weight_equivalence_on_sparse_data": "iterative solver: equal to its tolerance, not to 1e-7",
}


def run_check(check, estimator):
    """One named check of ``sklearn.utils.estimator_checks`` on ``estimator``."""
    getattr(estimator_checks, check)(type(estimator).__name__, estimator)


def failed_checks(estimator, expected=SAMPLE_WEIGHT_EXPECTED):
    """(name, message) of every check_estimator check that failed, beyond ``expected``."""
    results = estimator_checks.check_estimator(estimator, expected_failed_checks=expected, on_fail=None)
    return [(r["check_name"], str(r["exception"])[:200]) for r in results if r["status"] == "failed"]
