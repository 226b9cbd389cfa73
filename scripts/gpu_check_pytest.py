"""A pytest plugin for scripts/gpu-check.sh (`-p gpu_check_pytest`, with
scripts/ on PYTHONPATH): each test's outcome goes into the stage's JSON
(GPU_CHECK_JSON, part GPU_CHECK_PART) as soon as it is known, skips with
their reasons, so nothing depends on reading pytest's console output."""
import os

import gpu_check_results as results

_PATH = os.environ["GPU_CHECK_JSON"]
_PART = os.environ.get("GPU_CHECK_PART", "pytest")


def _skip_reason(report):
    lr = report.longrepr
    reason = lr[2] if isinstance(lr, tuple) and len(lr) == 3 else str(lr)
    return reason[len("Skipped: "):] if reason.startswith("Skipped: ") else reason


def pytest_runtest_logreport(report):
    name = report.nodeid
    if report.skipped:
        if hasattr(report, "wasxfail"):
            outcome, why = "failed", "xfail: " + str(report.wasxfail)
        else:
            outcome, why = "skipped", _skip_reason(report)
    elif report.failed:
        outcome, why = "failed", f"failed in {report.when}"
    elif report.when == "call":
        outcome, why = ("failed", "xpass") if hasattr(report, "wasxfail") else ("passed", "")
    else:
        return
    results.update(_PATH, lambda d: results.record(d, _PART, name, outcome, why))


def pytest_collectreport(report):
    if report.failed:
        results.update(_PATH, lambda d: results.record(
            d, _PART, report.nodeid or "collection", "failed", "collection error"))
