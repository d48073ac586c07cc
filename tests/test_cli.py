from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tinytools._cli import main

TOOLS = textwrap.dedent(
    '''
    from collections.abc import Iterator
    from typing import Literal
    from tinytools import Progress, Toolbox, tool

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @tool
    def count(n: int, progress: Progress) -> int:
        """Count up, reporting progress."""
        for i in range(1, n + 1):
            progress.progress(i, total=n, message=f"at {i}")
        return n

    @tool
    def shout(word: str, unit: Literal["c", "f"] = "c") -> str:
        return word.upper()

    @tool
    def lines(n: int) -> Iterator[str]:
        """Stream n lines, then a piece with no line end."""
        for i in range(n):
            yield f"line {i}\\n"
        yield "done"

    small = Toolbox([add])
    '''
)


@pytest.fixture
def tools_file(tmp_path: Path) -> Path:
    path = tmp_path / "my_tools.py"
    path.write_text(TOOLS)
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        status = main(list(argv))
    except SystemExit as exit:
        status = int(exit.code or 0)
    out, err = capsys.readouterr()
    return status, out, err


def test_schema_of_a_file_and_of_one_toolbox(tools_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "schema", f"{tools_file}:small")
    assert status == 0
    assert json.loads(out) == [
        {
            "name": "add",
            "description": "Add two integers.",
            "input_schema": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
                "additionalProperties": False,
            },
        }
    ]
    status, out, _ = run(capsys, "schema", f"{tools_file}:shout")
    assert [t["name"] for t in json.loads(out)] == ["shout"]


def test_schema_of_a_module_with_one_toolbox(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "schema", "tests.providers.mcp_server_tools")
    assert status == 0 and [t["name"] for t in json.loads(out)][:2] == ["get_weather", "add"]


def test_schema_in_a_providers_shape(tools_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "schema", f"{tools_file}:small", "--provider", "openai", "--strict")
    assert status == 0
    (entry,) = json.loads(out)
    assert entry["type"] == "function" and entry["function"]["strict"] is True
    status, out, _ = run(capsys, "schema", f"{tools_file}:small", "--provider", "anthropic")
    assert json.loads(out)[0]["input_schema"]["required"] == ["a", "b"]
    status, out, _ = run(capsys, "schema", f"{tools_file}:small", "--provider", "anthropic", "--strict")
    assert status == 0 and json.loads(out)[0]["strict"] is True


def test_call_prints_the_result_and_sets_the_exit_status(tools_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "call", str(tools_file), '{"name": "add", "arguments": {"a": 2, "b": 3}}')
    assert status == 0 and json.loads(out)["output"] == 5
    status, out, _ = run(capsys, "call", str(tools_file), '{"name": "add", "arguments": {"a": "x"}}')
    assert status == 1 and json.loads(out)["error"]["code"] == "invalid_arguments"


def test_progress_goes_to_stderr_as_lines(tools_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "call", f"{tools_file}:count", '{"name": "count", "arguments": {"n": 3}}')
    assert status == 0 and json.loads(out)["output"] == 3
    assert err.splitlines() == ["count: 1/3 at 1", "count: 2/3 at 2", "count: 3/3 at 3"]


def test_streamed_pieces_go_to_stderr_one_line_each(tools_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "call", f"{tools_file}:lines", '{"name": "lines", "arguments": {"n": 2}}')
    assert status == 0 and json.loads(out)["output"] == "line 0\nline 1\ndone"
    assert err.splitlines() == ["lines> line 0", "lines> line 1", "lines> done"]  # a piece's own line end is its line's


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["schema", "no/such/file.py"], "no such file"),
        (["schema", "no_such_module_xyz"], "cannot import"),
        (["call", "{file}", "not json"], "not JSON"),
        (["call", "{file}", "[1]"], "must be a JSON object"),
        (["schema", "{file}:missing"], "no tool or toolbox named"),
    ],
)
def test_bad_targets_exit_2_with_a_message(
    tools_file: Path, capsys: pytest.CaptureFixture[str], argv: list[str], needle: str
) -> None:
    status, _, err = run(capsys, *[a.replace("{file}", str(tools_file)) for a in argv])
    assert status == 2 and needle in err


def test_console_script_and_python_dash_m(tools_file: Path) -> None:
    for command in ([sys.executable, "-m", "tinytools"], [str(Path(sys.executable).with_name("tinytools"))]):
        if not Path(command[0]).exists():
            continue
        done = subprocess.run([*command, "schema", str(tools_file)], capture_output=True, text=True, check=True)
        assert [t["name"] for t in json.loads(done.stdout)] == ["add"]  # the file's one toolbox


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["call", "{file}"], "the following arguments are required: call"),
        (["call", "{file}", "add", '{"a": 1, "b": 2}'], "unrecognized arguments"),
        (["call", "{file}", '{"a": 1, "b": 2}'], "must be a JSON object"),
        (["call", "{file}", "add"], "not JSON"),
    ],
)
def test_a_wrong_call_prints_how_call_is_written(
    tools_file: Path, capsys: pytest.CaptureFixture[str], argv: list[str], needle: str
) -> None:
    status, out, err = run(capsys, *[a.replace("{file}", str(tools_file)) for a in argv])
    assert status == 2 and out == "" and needle in err
    assert """usage: tinytools call TARGET '{"name": "TOOL", "arguments": {...}}'""" in err


def test_call_help_shows_an_example(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "call", "--help")
    assert status == 0 and '"name": "search_docs", "arguments": {"query": "tools"}' in out
