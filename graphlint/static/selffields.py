"""A field read through ``self`` holds what the program stores into that field of *an object of the
reading method's class*, not what every object of any class keeps under the same name.

:mod:`.argvalues` gives ``config.x`` / ``self.x`` every value stored into a field named ``x``
anywhere. For ``self.x`` in a method of class ``C`` that is too wide to decide anything where the
name is common: ``self.layer_idx != -1`` in an experts layer whose ``layer_idx`` is always the
constructor's default sat beside a dozen decoder layers storing ``self.layer_idx = layer_idx`` from
their loop index, so a branch no call and no configuration can reach stayed hot. Here the stores
that may reach ``self.x`` read in ``C`` are (``ModuleInfo.owned_stores``, by :mod:`.fieldstores`):

- ``self.x = v`` in a method of a class an object of ``C`` may also be: ``C``'s subclasses (any
  depth) and every base of ``C`` or of one of them (a base's ``__init__``, a mixin's method);
- a keyword of a class construction (``Cfg(x=v)``) unless the class named is a project class
  outside that family (an unknown name -- an alias, a library class -- counts);
- every other store: ``obj.x = v`` on any other receiver, a class-body attribute, ``setattr``;
  but a computed-name ``setattr`` under ``if not hasattr(obj, name):`` (it only adds a field the
  object lacks) does not reach a field every object of the family gets in the ``__init__`` it runs.

Unknown stays unknown: a store of something unknown, an augmented store, too many stores, a
computed-name ``setattr`` anywhere, a read where the class is not known (a module function), and a
field no store in that family reaches (a library may set it) are all unknown.
"""

from __future__ import annotations

from graphlint.static.facts import ModuleInfo
from graphlint.static.index import Index

UNKNOWN = (None, None)  # an ``owned_stores`` entry: something unknown is stored (:mod:`.fieldstores`)


class SelfFields:
    def __init__(self, infos: list[ModuleInfo], index: Index | None = None):
        self.infos = infos
        self._index = index
        self._names: set[str] | None = None
        self._by_path = {info.path: info for info in infos}
        self._family: dict[tuple[str, str], tuple[set, set] | None] = {}

    def stores(self, attr: str, path: str, cls: str) -> list[tuple[str, tuple]] | None:
        """(module path, stored value) of every store that may reach ``self.attr`` read in class
        ``cls`` of module ``path``; None when one of them is unknown or the class is not found."""
        family = self.family(path, cls)
        if family is None:
            return None
        classes, names = family
        found: list[tuple[str, tuple]] = []
        for info in self.infos:
            for key in (attr, "*"):  # ``"*"``: a ``setattr`` with a computed name may store into ``attr``
                for owner, value in info.owned_stores.get(key, ()):
                    if owner is not None and owner[0] == "self" and (info.path, owner[1]) not in classes:
                        continue  # another class's own field
                    if owner is not None and owner[0] == "new" and owner[1] not in names \
                            and owner[1] in self.project_names():
                        continue  # a keyword of another project class's construction
                    if owner == ("fill",) and self.always_set(attr, path, cls):
                        continue  # adds a field an object lacks: never one every object of the family has
                    if value is None or key == "*":
                        return None
                    found.append((info.path, value))
        return found

    def always_set(self, attr: str, path: str, cls: str) -> bool:
        """Whether every object of ``cls`` or a subclass gets ``attr`` from the ``__init__`` it runs: a
        statement of that ``__init__`` that always runs stores ``self.attr`` (:func:`.fieldstores._always`)."""
        index = self.index()
        info = self._by_path.get(path)
        if info is None:
            return False
        for ref in ((info, cls), *index.subclasses((info, cls))):
            init = index.find_method(ref, "__init__")
            if init is None:
                return False
            owner_info, qualname = init
            first = ("self", qualname.rpartition(".")[0], True)
            if not any(owner == first for owner, _ in owner_info.owned_stores.get(attr, ())):
                return False
        return True

    def family(self, path: str, cls: str) -> tuple[set, set] | None:
        """The classes an object of ``cls`` may also be an instance of -- ``cls``, its subclasses and
        every project base of either -- as (module path, qualname) pairs, and their simple names."""
        key = (path, cls)
        if key not in self._family:
            index = self.index()
            info = self._by_path.get(path)
            if info is None or cls not in info.classes:
                self._family[key] = None
            else:
                ref = (info, cls)
                classes = {(i.path, n) for sub in (ref, *index.subclasses(ref)) for i, n in index.mro(sub)}
                self._family[key] = (classes, {n.rpartition(".")[2] for _, n in classes})
        return self._family[key]

    def index(self) -> Index:
        if self._index is None:
            self._index = Index(self.infos)
        return self._index

    def project_names(self) -> set[str]:
        if self._names is None:
            self._names = {q.rpartition(".")[2] for info in self.infos for q in info.classes}
        return self._names
