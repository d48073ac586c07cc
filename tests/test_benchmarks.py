"""The benchmark report: the committed results hold together, and the targets are judged right.

`benchmarks/run.py` needs the peers (the ``bench`` extra) and minutes, so it is not run here;
its report logic (`benchmarks/_report.py`) and the results it wrote are.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

BENCHMARKS = Path(__file__).parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

from _report import check_targets, markdown  # noqa: E402

RESULTS = json.loads((BENCHMARKS / "results.json").read_text(encoding="utf-8"))


def floor_of(section: dict[str, Any], row: dict[str, Any]) -> dict[str, Any]:
    floors = [item for item in section["rows"] if item["library"].startswith("floor")]
    if section["key"] == "call":  # one floor per tool: the valid call of that tool
        kind = row["case"].split()[0]
        floors = [item for item in floors if item["case"].split()[0] == kind]
    assert len(floors) == 1, (section["key"], row["case"])
    return floors[0]


def test_every_ratio_is_its_median_over_the_floor_of_the_same_run() -> None:
    for section in RESULTS["sections"]:
        for row in section["rows"]:
            assert row["median"] == pytest.approx(sorted(row["values"])[len(row["values"]) // 2])
            assert row["ratio"] == pytest.approx(row["median"] / floor_of(section, row)["median"])


def test_the_saved_verdicts_are_what_the_saved_figures_give() -> None:
    assert RESULTS["targets"] == check_targets(RESULTS["sections"])


def test_the_performance_page_shows_the_saved_run() -> None:
    readme = (BENCHMARKS.parent / "docs" / "performance.md").read_text(encoding="utf-8")
    tables = markdown(RESULTS)
    for ours in ("**tinytools dispatch**", "**tinytools adispatch**", "**tinytools**"):
        cells = next(line for line in tables.splitlines() if line.startswith(f"| {ours} |")).split("|")[2:]
        label = re.escape(ours.replace(" dispatch", " `dispatch`").replace(" adispatch", " `adispatch`"))
        shown = re.search(rf"^\| {label} \|(.*)$", readme, re.MULTILINE)
        assert shown is not None, ours
        assert shown.group(1).split("|") == cells


def _call_section(ours: float, peer: float) -> list[dict[str, Any]]:
    rows = [
        {"library": "floor", "case": "seven-arg valid", "median": 1.0, "ratio": 1.0},
        {"library": "tinytools dispatch", "case": "seven-arg valid", "median": ours, "ratio": ours},
        {"library": "some peer", "case": "seven-arg valid", "median": peer, "ratio": peer},
    ]
    return [{"key": "call", "rows": rows}]


@pytest.mark.parametrize(
    ("ours", "peer", "within_3x", "tenfold"),
    [(1.5, 15.0, True, True), (1.5, 14.9, True, False), (3.0, 30.0, True, True), (3.01, 40.0, False, True)],
)
def test_targets_are_met_exactly_at_their_thresholds(ours: float, peer: float, within_3x: bool, tenfold: bool) -> None:
    verdicts = {target["target"]: target["met"] for target in check_targets(_call_section(ours, peer))}
    assert verdicts["seven-arg valid call within 3x the floor"] is within_3x
    assert verdicts["seven-arg valid: >=10x faster than every peer"] is tenfold


def _dispatch_rows(scale: float) -> dict[str, tuple[float, float]]:
    """``bench_dispatch``'s rows with every goal at ``scale`` times its threshold."""
    from bench_dispatch import CASES, GOALS

    measured = {row: ((most, 1.0) if kind == "ns" else (1.0, most)) for row, _, kind, most in GOALS}
    measured = {row: (value * scale, ratio * scale) for row, (value, ratio) in measured.items()}
    for label in CASES:  # Dispatcher.dispatch against module dispatch, at scale times 1.05
        measured[f"{label} dispatch, valid"] = (1000.0, measured[f"{label} dispatch, valid"][1])  # a ratio goal too
        measured[f"{label} Dispatcher.dispatch, valid"] = (1050.0 * scale, 1.0)
    return measured


@pytest.mark.parametrize(("scale", "met"), [(1.0, True), (0.5, True), (1.001, False)])
def test_bench_dispatch_judges_each_goal_at_its_threshold(scale: float, met: bool) -> None:
    from bench_dispatch import GOALS, goals

    lines = goals(_dispatch_rows(scale))
    assert len(lines) == len(GOALS) + 2
    assert all(line.startswith("met ") is met and line.startswith("MISSED") is not met for line in lines), lines
