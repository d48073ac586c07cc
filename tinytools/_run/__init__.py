"""The pipeline layer: every call, from every entry point, through one ordered set of stages.

`dispatcher` holds `Dispatcher`, the entry points; `dispatch` the one-line forms; `pipeline` the
stages; `plan` what each tool needs, decided once; `drivers` how the pipeline waits from sync and
async code; `admission`, `approval`, `output` and `boundary` (with `secrets`) the stages' own
logic; `batch` the scheduling of a turn's calls; `threads` the worker threads and the loops of
sync callers; `outcomes` the results of calls that end without a value; `limits` and
`artifacts` the run's bounds and stores.
"""

__all__: list[str] = []
