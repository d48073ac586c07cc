"""The README's Guarantees table names tests that exist, in the files its legend gives."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
SECTION = README[README.index("## Guarantees") : README.index("## Providers")]
LEGEND = dict(re.findall(r"`([A-Z]{1,2})`\s+(?:is\s+)?`(tests/[\w/]+\.py)`", SECTION))
NAMED = re.findall(r"`([A-Z]{1,2})::(test_\w+)`", SECTION)


def test_the_legend_names_files_that_exist() -> None:
    assert len(LEGEND) >= 10
    missing = [path for path in LEGEND.values() if not (ROOT / path).is_file()]
    assert not missing


def test_every_test_the_table_names_is_defined_where_the_legend_says() -> None:
    assert len(NAMED) >= 40
    sources = {key: (ROOT / path).read_text(encoding="utf-8") for key, path in LEGEND.items()}
    missing = [
        f"{key}::{name}"
        for key, name in NAMED
        if key not in sources or re.search(rf"^(async )?def {name}\(", sources[key], re.MULTILINE) is None
    ]
    assert not missing
