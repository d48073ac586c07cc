"""The run layer: every call, from every entry point, through one ordered set of stages.

Entry points: `dispatcher` (`Dispatcher`, one run) and `shortcuts` (`dispatch` and the other
one-line forms); `batches` schedules a turn's calls (`gate` keeps a serial tool alone);
`pending_calls` finishes pending ones (resume, poll, expire, cancel). `plans` decides once per
tool what its calls need (`express`: the whole call of a plain plan in a few steps, sync or async), and
`pipeline` runs the stages, in this order (its docstring is the one account of them):

- admission: `admission` (with `limits`, and `near_misses` for unknown names);
- read: `reading`, into a call's records (`call_state`); `edits` reads what the application wrote;
- journal: `journal_stage`, on `journals` (the stores and their async faces; `sqlite_journal` the
  SQLite one), `entries` (what an
  entry says), `handles` (signed names of pending calls), `leases` (a worker's hold on the calls it
  runs), `background` (tasks) and `acts` (declared acts);
- policy: `policy_enforcement`; a plan tool's call is a call plan, checked whole here and its
  steps then run, each a call of its own, by `call_plans`;
- execution: `execution` binds and runs each attempt as a `jobs` job through `drivers` (sync or
  async), on `threads`; `streams` runs generator tools; `result_cache` answers read-only tools;
- output checks: `output_checks` (what a tool returned becomes data, or a failure);
- boundary: `boundary` (`secrets` scrubbed, the budget, `artifacts` for what does not fit) and
  `stream_boundary` for streamed pieces;
- record and events: back in `journal_stage` and `pipeline`.

`failures` builds the results of calls that end without a value, and `argument_messages` the
invalid-arguments message. `tracing` gives each call its OpenTelemetry span and duration, from
admission to the record, when the application traces.
"""

__all__: list[str] = []
