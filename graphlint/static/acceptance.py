"""A rejection sampler's acceptance test: ``if r < p / q:`` with ``r`` a uniform draw.

Host-driven speculative sampling decides, draft token by draft token, whether the target keeps
each one: a uniform draw (``r = torch.rand(1)``) compared with the ratio of the two models'
probabilities for it. Reading that comparison is the algorithm's read by design, as a
speculative step's accepted length is (:mod:`.stepresult`): the host needs it to know which
tokens it keeps and whether to resample. So the truth test of such a comparison in eager code or
in the host step around a replay is ``info``. Everything else stays what it was: the reads of
the probabilities themselves (``p[tok].item() / q[tok].item()``: one transfer of the whole test
would do), the same test inside captured code (a sync there still fails the capture), a
comparison with anything but a fresh uniform draw (``if target_p >= draft_p:``, a stop test), and
a draw against a constant (``if torch.rand(1) < 0.1:``: a biased coin, not a ratio of the models').

The walk tracks names flow-sensitively, as :class:`.tensorfacts.FunctionFacts`' other sets:
``uniform`` names last bound to ``torch.rand(...)`` / ``torch.rand_like(...)`` (or an element,
slice or alias of one), ``accepts`` names last bound to such a comparison (``discard = torch.rand(1)
<= p``, then ``if not discard:``); per class, the fields of ``self`` stores fill with draws (a tree
verifier's ``self.r = torch.rand(n).to(device)``, read as ``r = self.r[pos]``).
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.cstwalk import self_attr
from graphlint.static.names import resolve

UNIFORM = frozenset(("torch.rand", "torch.rand_like"))
MOVES = frozenset(("to", "cuda", "float", "half", "contiguous"))
CONSTANTS = (cst.Integer, cst.Float)
ORDERED = (cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual)
NOTE = " (a rejection sampler's acceptance test of a draft token: the speculative algorithm's host read, by design)"


def uniform(value: cst.BaseExpression, fn, imports: dict[str, str], cls=None) -> bool:
    """A uniform draw: ``torch.rand(...)`` (moved: ``.to(device)``), a name last bound to one, a
    field of ``self`` every store of which so far is one, an element or slice of one, or a product
    or quotient with one factor such (``r * q[tok]``)."""
    while type(value) is cst.Subscript or (type(value) is cst.Call and type(value.func) is cst.Attribute
                                           and value.func.attr.value in MOVES):
        value = value.value if type(value) is cst.Subscript else value.func.value
    if type(value) is cst.Name:
        return value.value in fn.uniform
    attr = self_attr(value)
    if attr is not None:
        return cls is not None and attr in cls.uniform_attrs and attr not in cls.other_uniform
    if type(value) is cst.BinaryOperation and type(value.operator) in (cst.Multiply, cst.Divide):
        return uniform(value.left, fn, imports, cls) or uniform(value.right, fn, imports, cls)
    return type(value) is cst.Call and resolve(value.func, imports) in UNIFORM


def acceptance(test: cst.BaseExpression, fn, imports: dict[str, str], cls=None) -> bool:
    """An ordered comparison with a uniform draw on one side, or a name last bound to one."""
    if type(test) is cst.Name:
        return test.value in fn.accepts
    if type(test) is not cst.Comparison or len(test.comparisons) != 1 \
            or type(test.comparisons[0].operator) not in ORDERED:
        return False
    left, right = test.left, test.comparisons[0].comparator
    if type(left) in CONSTANTS or type(right) in CONSTANTS:
        return False  # ``torch.rand(1) < 0.1``: a coin with a fixed bias, no ratio of two models' probabilities
    return uniform(left, fn, imports, cls) or uniform(right, fn, imports, cls)


def track(fn, cls, target: cst.BaseExpression, value: cst.BaseExpression | None, imports: dict[str, str]) -> None:
    """Note what ``target = value`` binds: a name, or a field of ``self`` (``self.r = torch.rand(n)``
    in ``__init__``: a store of anything else into it anywhere in the class, walked so far, vetoes it)."""
    drawn = value is not None and uniform(value, fn, imports, cls)
    attr = self_attr(target)
    if attr is not None and cls is not None:
        (cls.uniform_attrs if drawn else cls.other_uniform).add(attr)
    if type(target) is not cst.Name:
        return
    name = target.value
    (fn.uniform.add if drawn else fn.uniform.discard)(name)
    (fn.accepts.add if value is not None and acceptance(value, fn, imports, cls) else fn.accepts.discard)(name)
