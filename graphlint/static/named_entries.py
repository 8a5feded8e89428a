"""Entries from configuration and names, the part of :class:`graphlint.static.entries.Discovery`
that needs no evidence: ``--entry`` / ``entry`` functions, the ``hot-names`` guess (only without
evidence: nothing captured, replayed or looped per token; never with a recorded decode path), and
hot-named functions that run a captured callable eagerly and that nothing in the analysed code calls
(an eager twin of the captured step, an API for users: a guess too, since no decode path was seen
calling it; one that is called is hot exactly when its callers are) -- only while no loop that
runs the step was found: with a host step loop or a per-token loop the engine's own driver says
what runs, and an uncalled forward beside it is training, scoring or someone else's API.

A mixin: it reads the discovery's call graph, options and found evidence (``self.evidence``,
``self.calls``, ``self.graph``...) and adds entries through ``self.add``.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

from graphlint.static.facts import ModuleInfo
from graphlint.static.names import norm_path
from graphlint.static.options import StaticOptions

FuncId = tuple[str, str]


class NamedEntries:
    def eager_entries(self, graph_roots, compiled_graph, replayers, graph, callers) -> None:
        if self.options.entries:
            wanted = set()
            for entry in self.options.entries:
                path, _, qual = entry.rpartition(":")
                wanted.add((norm_path(path), qual))
            for info in self.infos:
                for qual in sorted(info.functions):
                    if (norm_path(info.path), qual) in wanted:
                        self.add("eager", (info.path, qual), "configured entry (--entry / entry)")
            return
        if self.options.recorded:
            return  # a recorded run says what is hot: no name heuristic (see :mod:`.recorded`)
        tests_hot = any(p.startswith("test") for p in self.options.hot_names)
        for info in self.infos:
            for qual, fn in sorted(info.functions.items()):
                fid = (info.path, qual)
                if qual == "<module>" or fn.device_code or (fn.name.startswith("test_") and not tests_hot):
                    continue
                if not self.hot_named(fn.name) or self.not_hot(fn.name, fid) or fid in self.calibrating:
                    continue
                if not self.evidence:
                    if fn.name == "__call__" and fn.cls and not self.class_live(info, fn.cls):
                        continue  # nothing here builds one: someone else calls it (see ``class_live``)
                    if not callers.get(fid):  # called from the analysed code: hot only if its caller is
                        self.add("eager", fid, f"name matches hot-names ({_pattern(fn.name, self.options)}); "
                                               "nothing is captured, and nothing here calls it", guessed=True)
                    continue
                if fid in graph or fid in replayers or fid in self.host_requesters or fn.captures:
                    continue
                root = next((c for c, site in self.calls.get(fid, ()) if c in graph_roots and c not in compiled_graph
                             and not site.in_capture and not site.reference), None)
                # called from the analysed code: hot only if its caller is; and once a loop that runs the
                # step (a host step loop, a per-token loop) is found, an uncalled twin of the captured
                # callable is no part of that path (a training or scoring ``forward``, a user API)
                if root is not None and not callers.get(fid) and not self.loop_bodies["host"] \
                        and not self.loop_bodies["eager"]:
                    self.add("eager", fid, f"runs the captured {root[1]} eagerly; nothing here calls it", guessed=True)

    def class_live(self, info: ModuleInfo, cls: str) -> bool:
        """Whether the analysed code builds an instance of ``cls`` or of a subclass (``Cls(...)``).
        A ``__call__`` runs on an instance: a class nothing here builds is called by someone else
        (another model's logits processor, a watermark detector run on finished text). ``forward``
        is exempt: models are built by loaders and user code and called through ``nn.Module``."""
        if self._made is None:
            self._made = self.graph.instantiated()
        family = {(i.path, name) for i, name in [(info, cls), *self.index.subclasses((info, cls))]}
        return bool(family & self._made)

    def hot_named(self, name: str) -> bool:
        return self._hot.match(name) is not None


def _pattern(name: str, options: StaticOptions) -> str:
    return next(p for p in options.hot_names if fnmatchcase(name, p))
