"""The static half: a libcst analyzer that follows the decode path through a codebase.

Two phases, so that per-file work can run in parallel and be cached by content hash:

1. :func:`graphlint.static.summarize.summarize_file` -- one file's source -> a picklable
   :class:`graphlint.static.api.FileSummary` (functions, classes, call sites, candidate
   hazards, suppressions). Pure: the same bytes and options give the same summary.
2. :func:`graphlint.static.link.link` -- all summaries -> call graph -> what the decode
   entries reach -> :class:`graphlint.finding.Finding` objects with call chains.

Phase 2 is recomputed on every run from (possibly cached) summaries, which is why a changed
file invalidates everything that depends on it without any dependency bookkeeping.
Nothing in this package imports torch.
"""
