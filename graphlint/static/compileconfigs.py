"""Compile options handed over as a library's configuration object:
``torch.compile(model.__call__, **CompileConfig().to_dict())``.

An engine that puts a Hugging Face model on a static cache often compiles its forward with the
settings transformers' own ``generate`` uses for one: ``CompileConfig``, whose ``mode`` defaults to
``"reduce-overhead"`` -- CUDA graphs. No mode literal is at the compile call, and the class is the
library's, so neither :func:`.regions.compile_kind` nor the project-wide mode names
(:mod:`.compilemodes`) saw one: the compile was taken for a plain one, the engine for an eager
one with no per-step loop (a speculative decoder whose every step runs the compiled target and
drafters reported nothing).

Recognised: a ``**`` splat at the compile call of a configuration object's dict -- ``C(...).to_dict()``,
``dataclasses.asdict(C(...))``, ``vars(C(...))`` -- where ``C`` is a library class whose default
mode captures (:data:`GRAPH_DEFAULT_CONFIGS`) and the call does not set another mode, or where the
call sets ``mode=`` to a CUDA-graph mode literal. A configuration object passed in from elsewhere
(``**compile_config.to_dict()`` of a parameter) is not followed: which one arrives is the caller's.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.names import resolve

#: library configuration classes whose ``mode`` defaults to a CUDA-graph mode (transformers'
#: ``CompileConfig``: ``mode="reduce-overhead"``, the settings ``generate`` compiles a static cache with)
GRAPH_DEFAULT_CONFIGS = frozenset((
    "transformers.CompileConfig",
    "transformers.generation.CompileConfig",
    "transformers.generation.configuration_utils.CompileConfig",
))
#: how a configuration object becomes the keyword arguments it is splatted as
_AS_DICT_METHODS = ("to_dict",)
_AS_DICT_CALLS = ("dataclasses.asdict", "asdict", "vars")


def _config_call(value: cst.BaseExpression, imports: dict[str, str]) -> cst.Call | None:
    """The constructor call a splatted dict is made from, or None."""
    if type(value) is not cst.Call:
        return None
    func = value.func
    if type(func) is cst.Attribute and func.attr.value in _AS_DICT_METHODS and not value.args:
        inner = func.value
    elif resolve(func, imports) in _AS_DICT_CALLS and len(value.args) == 1:
        inner = value.args[0].value
    else:
        return None
    return inner if type(inner) is cst.Call else None


def splat_captures(value: cst.BaseExpression, imports: dict[str, str], graph_mode) -> bool:
    """Whether ``torch.compile(f, **value)`` asks for CUDA graphs through a configuration object
    (see the module docstring). ``graph_mode(node)``: whether a ``mode=`` value is a graph mode."""
    call = _config_call(value, imports)
    if call is None:
        return False
    mode = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "mode"), None)
    if mode is not None:
        return graph_mode(mode)
    return resolve(call.func, imports) in GRAPH_DEFAULT_CONFIGS
