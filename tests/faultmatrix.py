"""The fault matrix the suite prints at its end: for each class of fault a test marks with
``@pytest.mark.fault("class", cases=N)``, how many cases were tried, handled, crashed (the
failure holds a Python traceback of the program under test) or wrong (any other failure), so
the next round of fault finding starts from it. Loaded by conftest.py; works under xdist (the
marker's arguments travel in each report's user_properties)."""

from __future__ import annotations

from collections import defaultdict

import pytest

_KEY = "fault-class"
_rows: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])  # tried, handled, crashed, wrong


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "fault(name, cases=1): a fault-matrix class and how many cases the test tries"
    )


def pytest_runtest_setup(item: pytest.Item) -> None:
    mark = item.get_closest_marker("fault")
    if mark is not None:
        item.user_properties.append((_KEY, (mark.args[0], int(mark.kwargs.get("cases", 1)))))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    props = dict(report.user_properties)
    if _KEY not in props or report.skipped:
        return
    if report.when == "call" or (report.when == "setup" and report.failed):
        name, cases = props[_KEY]
        row = _rows[name]
        row[0] += cases
        if report.passed:
            row[1] += cases
        elif "Traceback (most recent call last)" in str(report.longrepr):
            row[2] += cases
        else:
            row[3] += cases


def pytest_terminal_summary(terminalreporter) -> None:  # type: ignore[no-untyped-def]
    if not _rows:
        return
    tr = terminalreporter
    width = max(len(n) for n in _rows)
    tr.section("fault matrix (tests marked @pytest.mark.fault)")
    tr.write_line(f"{'class':<{width}}  tried  handled  crashed  wrong")
    total = [0, 0, 0, 0]
    for name in sorted(_rows):
        row = _rows[name]
        total = [a + b for a, b in zip(total, row, strict=True)]
        tr.write_line(f"{name:<{width}}  {row[0]:>5}  {row[1]:>7}  {row[2]:>7}  {row[3]:>5}")
    tr.write_line(f"{'all':<{width}}  {total[0]:>5}  {total[1]:>7}  {total[2]:>7}  {total[3]:>5}")
