"""Tool search: scale on 10,000 generated tools, and retrieval quality on the BFCL corpus.

    python benchmarks/bench_search.py            # both parts
    python benchmarks/bench_search.py --scale    # scale only (no download)

1. Scale: 10,000 tools with generated, realistic names, descriptions and parameters (domains x
   entities x actions x variants), each a `Tool` made from its JSON Schema as a remote MCP tool
   is. Prints the seconds to define them and to build the search index (on the first search),
   the median and p99 time of a query, and the memory per tool of the definitions and of the
   index (tracemalloc).
2. Retrieval quality: the Berkeley Function-Calling Leaderboard's data as shipped in the
   ``bfcl-eval`` wheel (downloaded once with ``pip download --no-deps`` into
   ``benchmarks/.cache``; the package's own dependencies are not installed). Its non-live
   categories (simple Python/Java/JavaScript, multiple, parallel, parallel multiple) give a pool
   of distinct functions and questions whose ground-truth functions are known. Every question
   searches the whole pool; recall@1, recall@5 and MRR are printed for `tinytools._search` and for
   ``rank-bm25``'s BM25Okapi over the same text (name, description, parameter names and
   descriptions, split into lower-case words), in the same run.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import re
import statistics
import subprocess
import sys
import time
import tracemalloc
import zipfile
from pathlib import Path
from typing import Any

from tinytools import InputSchema, Tool, Toolbox
from tinytools._search import Document, ToolIndex

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache"
BFCL = "bfcl-eval==2026.3.23"
CATEGORIES = ("simple_python", "simple_java", "simple_javascript", "multiple", "parallel", "parallel_multiple")

DOMAINS: dict[str, list[str]] = {
    "billing": ["invoice", "payment", "refund", "subscription", "coupon", "tax rate", "credit note", "receipt"],
    "crm": ["customer", "contact", "lead", "deal", "account", "note", "pipeline", "segment"],
    "hr": ["employee", "leave request", "payslip", "job opening", "candidate", "review", "team", "shift"],
    "devops": ["deployment", "server", "container", "alert", "log stream", "build", "secret", "cluster"],
    "travel": ["flight", "hotel room", "rental car", "itinerary", "visa", "train ticket", "airport", "seat"],
    "calendar": ["event", "meeting", "reminder", "calendar", "availability", "room booking", "invite", "agenda"],
    "email": ["message", "draft", "thread", "mailbox", "attachment", "signature", "filter", "label"],
    "storage": ["file", "folder", "bucket", "snapshot", "share link", "backup", "quota", "version"],
    "shipping": ["shipment", "parcel", "label", "carrier", "pickup", "return", "tracking number", "warehouse"],
    "inventory": ["product", "stock level", "supplier", "purchase order", "sku", "price list", "category", "bundle"],
    "support": ["ticket", "agent", "macro", "satisfaction survey", "queue", "escalation", "article", "chat"],
    "analytics": ["report", "dashboard", "metric", "funnel", "cohort", "experiment", "event stream", "goal"],
    "weather": [
        "forecast",
        "weather alert",
        "air quality",
        "rainfall",
        "temperature",
        "wind speed",
        "uv index",
        "tide",
    ],
    "maps": ["route", "place", "address", "geofence", "traffic", "distance", "elevation", "timezone"],
    "music": ["playlist", "track", "album", "artist", "podcast", "episode", "radio station", "lyrics"],
    "security": ["user", "role", "api key", "audit log", "session", "password reset", "device", "permission"],
}
ACTIONS = [
    ("get", "Get one {entity} of the {domain} service by its id."),
    ("list", "List the {entity}s in the {domain} service, newest first."),
    ("create", "Create a new {entity} in the {domain} service."),
    ("update", "Change the fields of an existing {entity} in {domain}."),
    ("delete", "Delete a {entity} from the {domain} service for good."),
    ("search", "Search {entity}s in {domain} by free text."),
    ("archive", "Archive a {entity} so it no longer shows in {domain}."),
    ("export", "Export {entity}s from {domain} as a CSV file."),
    ("send", "Send a {entity} from the {domain} service to someone by email."),
    ("approve", "Approve a pending {entity} in {domain}."),
    ("cancel", "Cancel a {entity} in the {domain} service."),
    ("summarize", "Summarize the recent activity of a {entity} in {domain}."),
]
VARIANTS = [
    ("", ""),
    ("_for_user", " Only those the given user owns."),
    ("_in_bulk", " Works on many at once, given their ids."),
    ("_history", " Returns the history of changes instead of the current state."),
    ("_stats", " Returns counts and totals instead of the items."),
    ("_async", " Runs as a background job and returns its job id."),
    ("_preview", " Shows what would change, without changing anything."),
]


def _generated(count: int) -> list[dict[str, Any]]:
    """``count`` tool definitions: name, description and a JSON Schema of 2 to 4 parameters."""
    rng = random.Random(7)
    made = []
    for variant, extra in VARIANTS:
        for verb, template in ACTIONS:
            for domain, entities in DOMAINS.items():
                for entity in entities:
                    slug = entity.replace(" ", "_")
                    properties: dict[str, Any] = {
                        f"{slug}_id": {"type": "string", "description": f"The id of the {entity}."},
                        "workspace": {"type": "string", "description": f"The {domain} workspace to act in."},
                    }
                    for name, schema in rng.sample(_EXTRAS, rng.randint(0, 2)):
                        properties[name] = schema
                    made.append(
                        {
                            "name": f"{domain}_{verb}_{slug}{variant}",
                            "description": template.format(entity=entity, domain=domain) + extra,
                            "schema": {
                                "type": "object",
                                "properties": properties,
                                "required": [f"{slug}_id"],
                                "additionalProperties": False,
                            },
                        }
                    )
    rng.shuffle(made)
    return made[:count]


_EXTRAS = [
    ("limit", {"type": "integer", "description": "How many to return at most."}),
    ("since", {"type": "string", "description": "Only those changed after this date (ISO 8601)."}),
    ("notify", {"type": "boolean", "description": "Tell the people concerned by email."}),
    ("reason", {"type": "string", "description": "Why, for the audit trail."}),
    ("currency", {"type": "string", "description": "ISO code of the currency amounts are shown in."}),
]


def _noop(**arguments: Any) -> dict[str, Any]:
    return arguments


def _defined(definitions: list[dict[str, Any]]) -> Toolbox:
    tools = [
        Tool(
            _noop, name=d["name"], description=d["description"], input_schema=InputSchema.parse(d["schema"], copy=False)
        )
        for d in definitions
    ]
    return Toolbox(tools)


def _memory(definitions: list[dict[str, Any]]) -> tuple[float, float]:
    """Bytes per tool of the definitions, and of the index, measured apart from the timings."""
    gc.collect()
    tracemalloc.start()
    box = _defined(definitions)
    defined = tracemalloc.get_traced_memory()[0]
    box.search("warm up the index")
    indexed = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return defined / len(definitions), (indexed - defined) / len(definitions)


def scale(count: int = 10_000, queries: int = 300) -> None:
    definitions = _generated(count)
    gc.collect()
    start = time.perf_counter()
    box = _defined(definitions)
    defined = time.perf_counter() - start
    start = time.perf_counter()
    box.search("warm up the index")
    indexed = time.perf_counter() - start
    per_tool, per_entry = _memory(definitions)
    rng = random.Random(11)
    asked = []
    for _ in range(queries):
        domain = rng.choice(list(DOMAINS))
        entity = rng.choice(DOMAINS[domain])
        verb = rng.choice(ACTIONS)[0]
        asked.append(rng.choice([f"{verb} the {entity}", f"please {verb} a {entity} in {domain}", f"{entity} {verb}"]))
    times = []
    for query in asked:
        begin = time.perf_counter_ns()
        box.search(query, k=5)
        times.append((time.perf_counter_ns() - begin) / 1e6)
    times.sort()
    print(f"scale: {count:,} tools")
    print(f"  define                    {defined:7.3f} s")
    print(f"  build the index           {indexed:7.3f} s")
    print(f"  define and index          {defined + indexed:7.3f} s   (goal: at most 1 s)")
    print(f"  query, median             {statistics.median(times):7.3f} ms  (goal: at most 1 ms)")
    print(f"  query, p99                {times[int(0.99 * len(times))]:7.3f} ms")
    print(f"  memory per tool, defined  {per_tool / 1024:7.1f} KiB")
    print(f"  memory per tool, index    {per_entry / 1024:7.1f} KiB")


def _bfcl_wheel() -> Path:
    CACHE.mkdir(exist_ok=True)
    found = sorted(CACHE.glob("bfcl_eval-*.whl"))
    if not found:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(CACHE), BFCL]
        subprocess.run(command, check=True)
        found = sorted(CACHE.glob("bfcl_eval-*.whl"))
    return found[-1]


def _lines(archive: zipfile.ZipFile, name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in archive.read(name).decode().splitlines() if line.strip()]


def _bfcl() -> tuple[list[dict[str, Any]], list[tuple[str, set[str]]]]:
    """The pool of distinct functions, and each question with its ground-truth function names."""
    pool: dict[str, dict[str, Any]] = {}
    questions = []
    with zipfile.ZipFile(_bfcl_wheel()) as archive:
        for category in CATEGORIES:
            entries = _lines(archive, f"bfcl_eval/data/BFCL_v4_{category}.json")
            answers = {a["id"]: a for a in _lines(archive, f"bfcl_eval/data/possible_answer/BFCL_v4_{category}.json")}
            for entry in entries:
                for function in entry["function"]:
                    pool.setdefault(function["name"], function)
                truth = {name for call in answers[entry["id"]]["ground_truth"] for name in call}
                text = " ".join(turn["content"] for turn in entry["question"][0] if turn["role"] == "user")
                questions.append((text, truth))
    return list(pool.values()), questions


def _document(function: dict[str, Any]) -> Document:
    properties = function.get("parameters", {}).get("properties", {})
    described = [str(p.get("description", "")) for p in properties.values() if isinstance(p, dict)]
    return Document(function["name"], function.get("description", ""), list(properties), described)


def _plain_words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def _measures(rankings: list[list[str]], questions: list[tuple[str, set[str]]]) -> dict[str, float]:
    at1 = at5 = reciprocal = 0.0
    for ranked, (_, truth) in zip(rankings, questions, strict=True):
        at1 += len(truth & set(ranked[:1])) / len(truth)
        at5 += len(truth & set(ranked[:5])) / len(truth)
        reciprocal += next((1 / rank for rank, name in enumerate(ranked, 1) if name in truth), 0.0)
    n = len(questions)
    return {"recall@1": at1 / n, "recall@5": at5 / n, "MRR": reciprocal / n}


def quality() -> None:
    from rank_bm25 import BM25Okapi  # type: ignore[import-untyped]

    functions, questions = _bfcl()
    names = [f["name"] for f in functions]
    documents = [_document(f) for f in functions]
    start = time.perf_counter()
    index = ToolIndex(documents)
    ours_build = time.perf_counter() - start
    start = time.perf_counter()
    ours = [[names[n] for n, _ in index.search(text, 10)] for text, _ in questions]
    ours_query = (time.perf_counter() - start) / len(questions) * 1e3
    corpus = [
        _plain_words(" ".join([d.name, d.description, *d.parameters, *d.parameter_descriptions])) for d in documents
    ]
    start = time.perf_counter()
    baseline = BM25Okapi(corpus)
    theirs_build = time.perf_counter() - start
    start = time.perf_counter()
    theirs = []
    for text, _ in questions:
        scores = baseline.get_scores(_plain_words(text))
        order = sorted(range(len(names)), key=lambda n: -scores[n])[:10]
        theirs.append([names[n] for n in order])
    theirs_query = (time.perf_counter() - start) / len(questions) * 1e3
    print(f"\nretrieval: BFCL non-live categories, {len(functions):,} distinct functions, {len(questions):,} questions")
    print(f"  {'':<26}{'recall@1':>9}{'recall@5':>10}{'MRR':>8}{'index s':>9}{'query ms':>10}")
    for label, ranked, build, query in (
        ("tinytools search (BM25F)", ours, ours_build, ours_query),
        ("rank-bm25 BM25Okapi", theirs, theirs_build, theirs_query),
    ):
        m = _measures(ranked, questions)
        print(f"  {label:<26}{m['recall@1']:9.3f}{m['recall@5']:10.3f}{m['MRR']:8.3f}{build:9.3f}{query:10.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", action="store_true", help="the scale part only")
    args = parser.parse_args()
    scale()
    if not args.scale:
        quality()


if __name__ == "__main__":
    main()
