"""The static half: a libcst analyzer that follows the decode path through a codebase.

Two phases, so that per-file work can run in parallel and be cached by content hash:

1. :func:`graphlint.static.summarize.summarize_file` -- one file's source -> a picklable
   :class:`graphlint.static.facts.FileSummary` (functions, classes, call sites, candidate
   hazards, suppressions). Pure: the same bytes and options give the same summary.
2. :func:`graphlint.static.link.link` -- all summaries -> call graph -> what the decode
   entries reach -> :class:`graphlint.finding.Finding` objects with call chains.

Phase 2 is recomputed on every run from (possibly cached) summaries, which is why a changed
file invalidates everything that depends on it without any dependency bookkeeping.
Nothing in this package imports torch.

What is hot is decided when linking, in three contexts (:mod:`.entries` finds the roots,
:mod:`.contexts` spreads them and weighs each candidate): *graph* code -- what a CUDA graph
captures or ``torch.compile(mode="reduce-overhead")`` compiles -- where every rule applies; the
*host* step around a replay, where only per-step costs are reported (at most warnings, the read-back
of the step's result ``info``); and *eager* decode paths (``--entry``, per-token loops, the
``hot_names`` fallback when nothing is captured). Not hot: import-time code, setup/warm-up/capture
functions, prefill- and training-only branches, guarded branches (``if VERBOSE:``), lazy one-time
initialisation. Details: :mod:`.regions` and :mod:`.loops` (what the walk notices),
:mod:`.index` (resolution), :mod:`.tensors` (what is a tensor, what is a position),
:mod:`.readbacks` (host copies of device data), :mod:`.guards`, :mod:`.staging`,
:mod:`.suppressions`, :mod:`.positions`, :mod:`.matchers` (rule kinds).
"""
