"""A per-token loop whose model graphlint cannot resolve, told by its shape (issue 19 item 2).

An eager engine often takes its model untyped (``def __init__(self, model, tokenizer): self.model
= model``) and nothing in the checked files builds it, so the points-to gives the field no value
and the loop's model call reaches no ``forward``. The loop is still per-token by what it does:
it calls a callable held in a ``self`` field (``self.model(ids)``, ``self.model.forward(ids,
...)``) with ids it *sampled* in the previous iteration -- the output of ``argmax``,
``multinomial``, ``topk`` or a ``*sample*`` helper reaches that call's arguments through the
body's assignments (``logits = self.model(ids); ids = sample(logits)``). That carry plus a model
call is evidence, not a name-only guess: its loop is an eager per-token loop at full severity
(:meth:`.tokenloops.TokenLoops.token_loops`). A field's callable whose result is only summed
(``total += self.fn(xs[i]).item()``), or fed back with no sampling in between (an iterative
solver's ``x = self.step(x)``), is no such loop. A parameter's model called by its ``forward``
(``talker.forward(input_ids=tok)`` in a fallback loop handed a library model) is one too, ranked
at most a warning: nothing checked says the engine runs that loop by default."""

from __future__ import annotations

from fnmatch import fnmatchcase

import libcst as cst

from graphlint.static.cstwalk import called_name, preorder
from graphlint.static.loopnames import MUTATING_METHODS

#: calls that pick the next token from scores: the method or function name, as written
SAMPLERS = ("argmax", "multinomial", "topk", "top_k", "*sample*", "greedy*")
#: a field's callable is called directly or through these methods
MODEL_METHODS = frozenset(("forward", "__call__"))
#: what only a module has among callables (a tensor has a ``device`` too, but is never called)
MODULE_ATTRS = frozenset(("device", "dtype", "config", "generation_config", "parameters", "named_parameters",
                          "buffers", "modules", "eval", "training"))


def is_sampler(call: cst.Call) -> bool:
    """Whether ``call`` picks tokens (``logits.argmax(-1)``, ``torch.multinomial(p, 1)``, ``sample(l)``,
    a greedy ``scores, ids = logits.max(-1)``)."""
    func = call.func
    name = called_name(func)
    return any(fnmatchcase(name.lower(), pat) for pat in SAMPLERS) or greedy_max(call, name)


def greedy_max(call: cst.Call, name: str) -> bool:
    """``x.max(-1)`` / ``x.max(dim=1)`` / ``torch.max(x, -1)``: the maximum along a dimension and its
    indices, an argmax. Not ``x.max()`` (a number), nor ``torch.max(a, b)`` of two tensors."""
    if name != "max":
        return False
    func = call.func
    method = type(func) is cst.Attribute and not (type(func.value) is cst.Name and func.value.value == "torch")
    if any(arg.keyword is not None and arg.keyword.value == "dim" for arg in call.args):
        return True
    positional = [arg.value for arg in call.args if arg.keyword is None]
    dim = positional[0 if method else 1] if len(positional) == (1 if method else 2) else None
    dim = dim.expression if type(dim) is cst.UnaryOperation and type(dim.operator) is cst.Minus else dim
    return type(dim) is cst.Integer


def field_callable(expr: tuple) -> bool:
    """Whether the callee ``expr`` (:mod:`.flowir`) is a ``self`` field's callable: ``self.model``,
    ``self.model.forward``, ``self.model.__call__``."""
    if expr and expr[0] == "a" and expr[2] in MODEL_METHODS and _self_field(expr[1]):
        return True
    return _self_field(expr)


#: a container's mutating methods and a queue's: a store of the ids, no step that runs on them
_STORES = MUTATING_METHODS | {"put", "put_nowait", "send"}


def field_method(expr: tuple, tensors: set[str] | frozenset = frozenset()) -> bool:
    """Whether the callee ``expr`` is a method of a ``self`` field (``self.decoder.predict``): a
    module the object holds, called by one of its own steps -- not a field known to hold a tensor
    (``tensors``), nor a store of the ids (``self.out.append(tok)``, ``self.buf.copy_(tok)``)."""
    return bool(expr) and expr[0] == "a" and _self_field(expr[1]) and expr[1][2] not in tensors \
        and expr[2] not in _STORES and not expr[2].endswith("_")


def _self_field(expr) -> bool:
    return bool(expr) and expr[0] == "a" and isinstance(expr[1], tuple) and bool(expr[1]) \
        and (expr[1][0] == "self" or expr[1] == ("n", "self"))


def parameter_forward(expr: tuple, params: set[str]) -> bool:
    """``talker.forward(...)`` with ``talker`` a parameter of the function, never rebound: a model
    handed in by the caller, called by its ``forward`` by name (a plain ``fn(x)`` of a parameter is
    as often a callback, and is left out)."""
    return bool(expr) and expr[0] == "a" and expr[2] == "forward" and expr[1][:1] == ("n",) \
        and expr[1][1] in params


def parameter_module(expr: tuple, params: set[str], classes: dict[str, str]) -> bool:
    """``model(ids)`` with ``model: nn.Module`` a parameter of the function, never rebound: the
    annotation says it is a module, no callback (an exported ``generate(model, ...)`` loop)."""
    return len(expr) == 2 and expr[0] == "n" and expr[1] in params and classes.get(expr[1]) == "Module"


def used_modules(body: cst.CSTNode | None, called: set[str]) -> set[str]:
    """Those of ``called`` (parameters the loop calls) whose module attributes the function body
    reads (``model.device``, ``model.eval()``)."""
    if body is None or not called:
        return set()
    return {node.value.value for node in preorder(body) if type(node) is cst.Attribute
            and type(node.value) is cst.Name and node.value.value in called and node.attr.value in MODULE_ATTRS}


def sampled_calls(frame, feeding: list[tuple[int, tuple, set[str]]], params: set[str] = frozenset(),
                  classes: dict[str, str] | None = None, modules: set[str] = frozenset(),
                  tensors: set[str] | frozenset = frozenset()) -> list[tuple]:
    """The feeding calls of ``frame`` (:class:`.loops.LoopFrame`) of a field's callable (or a
    parameter's ``forward``, or a parameter annotated as a module called, ``params`` the function's
    parameters, ``classes`` the classes their annotations name) that read, from an earlier
    iteration, what a sampling call of the body produced; and the calls of a parameter the
    function uses as a module (``modules``, :func:`used_modules`) that read, from an earlier
    iteration, what the body stored of their output (:func:`_stored`). ``tensors``: the class's
    fields known to hold tensors (their methods are no model's)."""
    found: list[tuple] = []
    for order, expr, reads in feeding:
        used = len(expr) == 2 and expr[0] == "n" and expr[1] in modules
        plain = not used and parameter_call(expr, params) and not parameter_module(expr, params, classes or {})
        if expr in found or not (used or plain or field_callable(expr) or field_method(expr, tensors)
                                 or parameter_forward(expr, params) or parameter_module(expr, params, classes or {})):
            continue
        carried = frame.exposed(order, reads)
        made = frame.derived(order) if plain else None
        if any(frame.derived(s) & carried and (made is None or _samples(frame, s, made)) for s in frame.sampled) \
                or used and _stored(frame, order, carried):
            found.append(expr)
    return found


def parameter_call(expr: tuple, params: set[str]) -> bool:
    """``model(ids)``: a parameter of the function, never rebound, called plainly -- a model handed
    in, or a callback (``on_token(tok)``, ``step(x)``). :func:`sampled_calls` takes it for the loop's
    model only when the loop *samples its output* and feeds the sample back into it (``logits =
    model(idx); nxt = argmax(logits); idx = cat(idx, nxt)``): the issue's per-token loop, whatever
    the parameter holds. A callback handed the ids (a streamer) or one whose output is not sampled
    (an iterative ``x = step(x)``) is no model."""
    return len(expr) == 2 and expr[0] == "n" and expr[1] in params


def _samples(frame, sampler: int, made: set[str]) -> bool:
    """Whether the sampling statement at ``sampler`` reads what a call made (``made``: what its
    output flows into, :meth:`.loops.LoopFrame.derived`): the ids are picked from that call's scores."""
    return bool(frame.made_at.get(sampler, set()) & made)


def picked_calls(frame, feeding: list[tuple[int, tuple, set[str]]]) -> list[tuple]:
    """The feeding calls of ``frame`` that read, from an earlier iteration, what a sampling call of
    the body produced, whatever their callee (:mod:`.libmodels` judges what they run)."""
    if not frame.sampled:
        return []
    found: list[tuple] = []
    for order, expr, reads in feeding:
        if expr not in found:
            carried = frame.exposed(order, reads)
            if any(frame.derived(s) & carried for s in frame.sampled):
                found.append(expr)
    return found


def _stored(frame, order: int, carried: set[str]) -> bool:
    """Whether the body stores what the call at ``order`` produced into a container the call reads
    from an earlier iteration (``x[picked] = x0[picked]``, ``ids.append(tok)``)."""
    made = frame.derived(order)
    return any(sources & made for name in carried for _, sources in frame.fills.get(name, ()))
