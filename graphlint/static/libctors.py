"""Alternate constructors a project class inherits from a library base.

``model = Llama.from_pretrained(path)`` with ``class Llama(PreTrainedModel)`` (the base imported
from a library): the classmethod is the library's, so no project code says what it returns, and
without this the model is nothing -- every ``self.model(x)`` of the engine it is handed to stays
unresolved, and the model's ``forward`` is never analysed. By the convention every model library
follows (transformers', diffusers', timm's and torch's own ``from_*``/``load*`` classmethods end in
``cls(...)``), such a call builds an instance of the class it is called on, running its
``__init__``.

Decided, to keep precision: only a method the project's classes do not bind themselves (a
project classmethod is followed through its body, ``cls`` included), called on a class whose MRO
reaches a base imported from outside the project (a class with project bases only has no hidden
methods: ``Helper.from_pretrained`` is an error, not a constructor), and only names that say
"constructor" (:data:`CTOR_NAMES`). Other library classmethods return something else
(``register_for_auto_class`` nothing) and stay library calls.

One more library classmethod runs project code: ``Fn.apply(x, group)`` on a subclass of
``torch.autograd.Function`` runs ``Fn.forward(ctx, x, group)`` (:meth:`LibraryCtors.is_apply`) --
often bound once as a module global (``all_reduce = AllReduceFunc.apply``) and called through it,
so without this the collectives and custom kernels of a model layer are a blind spot.
"""

from __future__ import annotations

from graphlint.static.index import ClassRef, Index
from graphlint.static.names import name_matcher

#: names of alternate constructors: ``from_pretrained``, ``from_config``, ``_from_config``,
#: ``from_dict``, ``from_checkpoint``, ``load``, ``load_from_checkpoint``, ``build``, ``create``
CTOR_NAMES = ("from_*", "_from_*", "load", "load_*", "build", "build_model", "create", "create_model")
_MATCH = name_matcher(CTOR_NAMES)
AUTOGRAD_FUNCTION = "autograd.Function"


def _dotted(info, name: str) -> str:
    """A base's name through the file's imports: ``Function`` -> ``torch.autograd.Function``."""
    head, _, rest = name.partition(".")
    full = info.imports.get(head, head)
    return f"{full}.{rest}" if rest else full


class LibraryCtors:
    """Answers, per (class, attribute): is ``Cls.attr(...)`` a library's alternate constructor?"""

    def __init__(self, index: Index):
        self.index = index
        self._foreign: dict[tuple[str, str], bool] = {}

    def library_base(self, ref: ClassRef) -> bool:
        """Whether the class or one of its project bases derives from a class imported from outside."""
        key = (ref[0].path, ref[1])
        found = self._foreign.get(key)
        if found is None:
            found = self._foreign[key] = any(
                base[0] == "dotted" and self.index.class_ref(info, base) is None
                for info, name in self.index.mro(ref) for base in info.classes[name].bases)
        return found

    def is_apply(self, ref: ClassRef, attr: str, bound_in_project: bool) -> bool:
        """``Fn.apply`` of a class deriving from ``torch.autograd.Function`` (however imported)."""
        if attr != "apply" or bound_in_project:
            return False
        key = ("apply", ref[0].path, ref[1])
        found = self._foreign.get(key)
        if found is None:
            found = self._foreign[key] = any(
                base[0] == "dotted" and self.index.class_ref(info, base) is None
                and _dotted(info, base[1]).endswith(AUTOGRAD_FUNCTION)
                for info, name in self.index.mro(ref) for base in info.classes[name].bases)
        return found

    def is_ctor(self, ref: ClassRef, attr: str, bound_in_project: bool) -> bool:
        return not bound_in_project and bool(_MATCH.match(attr)) and self.library_base(ref)
