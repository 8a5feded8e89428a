"""Captured callables passed as arguments: ``with torch.cuda.graph(g): fn(x)`` where ``fn`` is a
parameter.

A graph runner often captures whatever its caller hands it::

    def capture(self, fn, x):                      # fn is a parameter
        with torch.cuda.graph(self.g):
            self.out = fn(x)

    def _decode(self, x):                          # the caller
        if self.runner.needs_capture(x):
            return self.runner.capture(self._token_forward, x)
        return self.runner.replay(x)

While a file is walked, the capturing function records which of its parameters it calls inside
the capture (``FunctionInfo.captured_params``) and every function records the arguments it passes
that may be callables (``FunctionInfo.passes``: a bound method, a module function, or one of its
own parameters passed on). When linking, a parameter passed on to a captured parameter is itself
captured (``capture_decode(fn) -> _capture_decode(fn)``, to a fixed point), and a callable passed
to a captured parameter is graph code: ``_token_forward`` above. Its caller (``_decode``), when it
also leads to a replay, is the host step around that graph (see :mod:`.entries`).
"""

from __future__ import annotations

from typing import Any

import libcst as cst

from graphlint.static.facts import Descriptor, ModuleInfo

FuncId = tuple[str, str]


def record_passes(recorder: Any, call: cst.Call, callee: Descriptor) -> None:
    """At walk time (``recorder``: the walker's :class:`graphlint.static.calls.CallRecorder`): the
    call's arguments that may be callables."""
    at = recorder.at
    fn, facts = at.func, recorder.oracle.fn
    for i, arg in enumerate(call.args):
        if arg.star:
            break  # positions after ``*args`` are unknown
        slot = arg.keyword.value if arg.keyword is not None else i
        value = arg.value
        if isinstance(value, cst.Name):
            name = value.value
            if name in fn.params and name not in facts.objects:  # hot-named functions presume every parameter a tensor
                fn.passes.append((callee, slot, "param", name, at.order))
            elif (desc := recorder.local_callable(value)) is not None:
                fn.passes.append((callee, slot, "callable", desc, at.order))
        elif (isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name) and value.value.value == "self"
              and recorder.oracle.cls is not None and value.attr.value not in recorder.oracle.cls.tensor_attrs):
            fn.passes.append((callee, slot, "callable", ("member", ("self", ()), value.attr.value), at.order))


def note_captured_param(recorder: Any, call: cst.Call) -> None:
    """``fn(x)``, ``fn`` a parameter of the capturing function (the recorder calls this only inside a
    capture)."""
    at, func = recorder.at, call.func
    if isinstance(func, cst.Name) and func.value in at.func.params:
        facts = recorder.oracle.fn
        if func.value not in facts.objects and func.value not in facts.callables \
                and func.value not in at.func.captured_params:
            at.func.captured_params = (*at.func.captured_params, func.value)


def _slot_name(params: tuple[str, ...], slot: int | str) -> str | None:
    if isinstance(slot, int):
        return params[slot] if slot < len(params) else None
    return slot if slot in params else None


def _captured_slot(by_path: dict, captured: dict, target: FuncId, slot: int | str) -> tuple[str | None, FuncId | None]:
    """The parameter of ``target`` that an argument in ``slot`` binds, and where it is captured."""
    name = _slot_name(by_path[target[0]].functions[target[1]].params, slot)
    return name, captured.get(target, {}).get(name) if name else None


def captured_arguments(infos: list[ModuleInfo], index: Any) -> list[tuple[FuncId, FuncId, FuncId, str, int]]:
    """(caller, captured callable, capturing function, its parameter, order of the call in the
    caller) for every callable passed to a captured parameter, directly or through parameters
    passed on."""
    by_path = {info.path: info for info in infos}
    captured: dict[FuncId, dict[str, FuncId]] = {  # function -> captured parameter -> where it is captured
        (info.path, q): {p: (info.path, q) for p in fn.captured_params}
        for info in infos for q, fn in info.functions.items() if fn.captured_params
    }
    if not captured:
        return []
    passes = []
    for info in infos:
        for qual, fn in info.functions.items():
            for callee, slot, kind, value, order in fn.passes:
                targets = [(t.path, q) for t, q in index.targets(info, fn.cls, callee)]
                passes.append(((info.path, qual), info, fn.cls, targets, slot, kind, value, order))
    changed = True
    while changed:  # a parameter passed on to a captured parameter is captured
        changed = False
        for fid, _, _, targets, slot, kind, value, _ in passes:
            if kind != "param":
                continue
            for target in targets:
                name, origin = _captured_slot(by_path, captured, target, slot)
                if origin is not None and value not in captured.get(fid, {}):
                    captured.setdefault(fid, {})[value] = origin
                    changed = True
    found = []
    for fid, info, cls, targets, slot, kind, value, order in passes:
        if kind != "callable":
            continue
        for target in targets:
            name, origin = _captured_slot(by_path, captured, target, slot)
            if origin is None:
                continue
            for t_info, t_qual in index.targets(info, cls, value):
                found.append((fid, (t_info.path, t_qual), origin, name, order))
    return sorted(set(found))
