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

What is hot (reported): code reachable from the entries (``--entry``, else functions named like
``hot_names``: ``forward``, ``__call__``, ``*decode*``, ``*step*``), code inside ``with
torch.cuda.graph(...)`` / between ``capture_begin()`` and ``capture_end()`` and what it calls,
and the ``fn`` of every ``Region`` declared with graphlint's target protocol. Not hot:
import-time code, code no entry reaches (``__init__``, warm-up), branches under guard names
(``if VERBOSE:``, ``if self._profile_detail:``), ``if not torch.cuda.is_current_stream_capturing():``,
and lazy one-time initialisation (``if self._runner is None: self._runner = ...``).
Details: :mod:`.link` (resolution), :mod:`.tensors` (what is a tensor, what is a position),
:mod:`.readbacks` (host copies of device data), :mod:`.guards`, :mod:`.suppressions`,
:mod:`.positions`, :mod:`.matchers` (rule kinds).
"""
