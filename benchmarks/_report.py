"""Turning `run.py`'s measurements into the printed table, the JSON file, the PNG chart and the
verdict on the issue's targets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["check_targets", "draw_chart", "format_value", "markdown", "print_table", "write_json"]

OURS = "tinytools dispatch"
"""Our row in the per-call section; elsewhere the row is plain ``tinytools``."""
FLOOR = "floor"


def format_value(unit: str, value: float) -> str:
    if unit == "ns":
        if value < 1_000:
            return f"{value:,.0f} ns"
        if value < 1_000_000:
            return f"{value / 1e3:,.1f} µs"
        return f"{value / 1e6:,.2f} ms"
    if unit == "ms":
        return f"{value:,.1f} ms" if value < 1_000 else f"{value / 1e3:,.2f} s"
    if unit == "B":
        return f"{value / 1024:,.1f} KiB"
    return f"{value:,.3g} {unit}"


def _is_peer(label: str) -> bool:
    return not label.startswith((FLOOR, "tinytools"))


def _find(sections: list[dict[str, Any]], key: str, library: str, case: str | None = None) -> dict[str, Any] | None:
    for section in sections:
        if section["key"] != key:
            continue
        for item in section["rows"]:
            if item["library"] == library and (case is None or item["case"] == case):
                return item
    return None


def _peer_rows(sections: list[dict[str, Any]], key: str, case: str | None = None) -> list[dict[str, Any]]:
    return [
        item
        for section in sections
        if section["key"] == key
        for item in section["rows"]
        if _is_peer(item["library"]) and (case is None or item["case"] == case)
    ]


def _versus_peers(
    sections: list[dict[str, Any]], key: str, case: str | None, *, ours_label: str = OURS
) -> tuple[float, str] | None:
    ours = _find(sections, key, ours_label, case)
    peers = _peer_rows(sections, key, case)
    if ours is None or not peers:
        return None
    closest = min(peers, key=lambda item: item["median"])
    return closest["median"] / ours["median"], closest["library"]


def check_targets(sections: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The issue's targets, each with the measured figure and whether it was met."""
    targets: list[dict[str, Any]] = []

    def add(name: str, figure: str, met: bool) -> None:
        targets.append({"target": name, "measured": figure, "met": met})

    seven = _find(sections, "call", OURS, "seven-arg valid")
    if seven is not None:
        add("seven-arg valid call within 3x the floor", f"{seven['ratio']:.2f}x", seven["ratio"] <= 3)
    for case in ("seven-arg valid", "one-arg invalid", "seven-arg invalid"):
        found = _versus_peers(sections, "call", case)
        if found is not None:
            ratio, closest = found
            add(f"{case}: >=10x faster than every peer", f"{ratio:.1f}x (closest: {closest})", ratio >= 10)
    found = _versus_peers(sections, "import", None, ours_label="tinytools")
    if found is not None:
        ratio, closest = found
        add("import >=10x faster than the fastest peer", f"{ratio:.1f}x (fastest peer: {closest})", ratio >= 10)
    build = _find(sections, "build", "tinytools")
    if build is not None:
        add("1,000 tools defined and exported in < 0.5 s", format_value("ms", build["median"]), build["median"] < 500)
    return targets


def print_table(results: dict[str, Any]) -> None:
    print(f"\n{'library':<38} {'case':<40} {'median':>11} {'best':>11} {'ratio':>9}")
    for section in results["sections"]:
        unit = section["unit"]
        print(f"-- {section['title']}")
        for item in section["rows"]:
            print(
                f"{item['library']:<38} {item['case'][:40]:<40} {format_value(unit, item['median']):>11}"
                f" {format_value(unit, item['best']):>11} {item['ratio']:>8.2f}x"
            )
    if results.get("targets"):
        print("-- Targets")
        for target in results["targets"]:
            print(f"{'met   ' if target['met'] else 'MISSED'} {target['target']:<52} {target['measured']}")
    meta = results["meta"]
    print(f"\nPython {meta['python']} on {meta['platform']}, {meta['cpus']} CPUs, {meta['seconds']} s")


def write_json(results: dict[str, Any], path: Path) -> None:
    path.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")


def _color(label: str) -> str:
    if label.startswith("tinytools"):
        return "#1f77b4"
    if label.startswith(FLOOR):
        return "#7f7f7f"
    return "#ff7f0e"


def _bars(axis: Any, section: dict[str, Any], cases: list[str] | None, *, log: bool, scale: float, unit: str) -> None:
    rows = [item for item in section["rows"] if cases is None or item["case"] in cases]
    labels = [item["library"] + (f" · {item['case'].split()[-1]}" if cases and len(cases) > 1 else "") for item in rows]
    values = [item["median"] * scale for item in rows]
    positions = range(len(rows))
    axis.barh(positions, values, color=[_color(item["library"]) for item in rows])
    axis.set_yticks(list(positions), labels, fontsize=8)
    axis.invert_yaxis()
    if log:
        axis.set_xscale("log")
        axis.set_xlim(right=max(values) * 4)  # room for the ratio labels
    else:
        axis.set_xlim(0, max(values) * 1.15)
    axis.set_xlabel(unit, fontsize=8)
    axis.tick_params(axis="x", labelsize=8)
    for position, value, item in zip(positions, values, rows, strict=True):
        axis.annotate(f" {item['ratio']:.1f}x", (value, position), va="center", fontsize=7, annotation_clip=False)


def draw_chart(results: dict[str, Any], path: Path) -> None:
    """One panel per measurement, medians as horizontal bars, each labelled with its ratio to the floor."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sections = {section["key"]: section for section in results["sections"]}
    panels: list[tuple[str, str, list[str] | None, bool, float, str]] = [
        ("call", "Per call, seven-arg tool", ["seven-arg valid", "seven-arg invalid"], True, 1e-3, "µs"),
        ("call", "Per call, one-arg tool", ["one-arg valid", "one-arg invalid"], True, 1e-3, "µs"),
        ("import", "Import in a fresh process", None, True, 1.0, "ms"),
        ("define", "Define one tool, ready to serve", None, True, 1e-3, "µs"),
        ("build", "1,000 tools defined and exported", None, True, 1.0, "ms"),
        ("memory", "Memory per tool", None, True, 1 / 1024, "KiB"),
        ("batch", "1,000 x 10 ms async calls, 64 at once", None, False, 1.0, "ms"),
    ]
    panels = [panel for panel in panels if panel[0] in sections]
    columns = 2
    rows = (len(panels) + columns - 1) // columns
    figure, axes = plt.subplots(rows, columns, figsize=(15, 3.6 * rows), squeeze=False)
    for axis, (key, title, cases, log, scale, unit) in zip(axes.flat, panels, strict=False):
        _bars(axis, sections[key], cases, log=log, scale=scale, unit=unit)
        axis.set_title(title, fontsize=10)
        if key == "build":
            axis.axvline(500, color="#2ca02c", linestyle="--", linewidth=1)
    for axis in list(axes.flat)[len(panels) :]:
        axis.axis("off")
    meta = results["meta"]
    figure.suptitle(
        f"tinytools (blue) vs peers (orange) vs floor (grey); medians, ratio to the floor.  "
        f"Python {meta['python']}, {meta['cpus']} CPUs",
        fontsize=11,
    )
    figure.tight_layout(rect=(0, 0, 1, 0.97))
    figure.savefig(path, dpi=110)
    plt.close(figure)


CALL_CASES = ("one-arg valid", "one-arg invalid", "seven-arg valid", "seven-arg invalid")
SETUP_SECTIONS = ("import", "define", "build", "memory")


def _cell(section: dict[str, Any], library: str, case: str | None = None) -> str:
    for item in section["rows"]:
        if item["library"] == library and (case is None or item["case"] == case):
            value = format_value(section["unit"], item["median"])
            return f"{value} ({item['ratio']:.1f}x)" if library != FLOOR else value
    return "n/a"


def markdown(results: dict[str, Any]) -> str:
    """The tables of docs/performance.md: per-call medians, then setup costs, each with its ratio to the floor."""
    sections = {section["key"]: section for section in results["sections"]}
    lines = []
    if "call" in sections:
        call = sections["call"]
        libraries = list(dict.fromkeys(item["library"] for item in call["rows"]))
        lines += ["| per call | " + " | ".join(CALL_CASES) + " |", "|---" * (len(CALL_CASES) + 1) + "|"]
        for library in libraries:
            name = f"**{library}**" if library.startswith("tinytools") else library
            cells = [
                "—" if library == FLOOR and "invalid" in case else _cell(call, library, case) for case in CALL_CASES
            ]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        lines.append("")
    present = [key for key in SETUP_SECTIONS if key in sections]
    if present:
        titles = {"import": "import", "define": "define one tool", "build": "1,000 tools", "memory": "memory per tool"}
        libraries = list(dict.fromkeys(item["library"] for key in present for item in sections[key]["rows"]))
        lines += ["| setup | " + " | ".join(titles[key] for key in present) + " |", "|---" * (len(present) + 1) + "|"]
        for library in libraries:
            name = f"**{library}**" if library.startswith("tinytools") else library
            lines.append(f"| {name} | " + " | ".join(_cell(sections[key], library) for key in present) + " |")
    return "\n".join(lines)
