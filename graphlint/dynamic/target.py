"""The target protocol: how graphlint drives an engine it knows nothing about.

A *factory* (``--target path/to/file.py:make_target``) is called as
``factory(devices: list[torch.device], **options) -> Target`` and must build the engine
deterministically (same weights for the same options), because the replay probe builds two
instances and compares a graph-replayed one with an eager one.

A :class:`Target` splits one decode step into three parts:

* ``stage(step)`` -- host-side staging of step ``step``'s inputs into the engine's static
  buffers (token ids, positions). It is never captured. Inputs must be a deterministic
  function of ``step`` (teacher forcing), so two instances see the same inputs and the
  replay probe can change inputs from step to step.
* ``regions()`` -- the step as an ordered list of :class:`Region`. Running every region's
  ``fn`` in order, after ``stage(step)``, performs the step. A capturable region's ``fn``
  must read and write only static buffers so that a CUDA graph of it can be replayed.
  ``capturable=False`` marks a deliberately eager region (e.g. attention between graphs).
* ``output()`` -- the step's result (logits), read after the last region.

A target with no ``regions`` method is treated as one region named ``step`` calling
``target.step()``. :class:`ModuleTarget` adapts a plain ``nn.Module`` decode step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, runtime_checkable


@dataclass
class Region:
    name: str
    fn: Callable[[], Any]
    device: Any = "cpu"  # torch.device or str; where the region's kernels run
    capturable: bool = True
    # Optional: the source of the region, for attributing findings when a probe has no frame.
    source: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Target(Protocol):
    devices: list[Any]

    def stage(self, step: int) -> None: ...

    def regions(self) -> list[Region]: ...

    def output(self) -> Any: ...


def regions_of(target: Any) -> list[Region]:
    """The target's regions, or one region wrapping ``target.step`` when it declares none."""
    if hasattr(target, "regions"):
        regions = list(target.regions())
        if regions:
            return regions
    step = getattr(target, "step", None)
    if step is None:
        raise TypeError(f"{type(target).__name__} has neither regions() nor step()")
    devices = getattr(target, "devices", None) or ["cpu"]
    return [Region(name="step", fn=step, device=devices[0])]


class ModuleTarget:
    """Adapts a plain ``nn.Module`` decode step to the protocol.

    ``inputs`` are the module's static input buffers (keyword arguments of ``forward``), on
    ``device``; ``feed(step)`` returns host tensors (or numbers) that :meth:`stage` copies into
    them, so step ``n``'s inputs are a function of ``n`` alone. The whole forward is one
    capturable region; its output tensor is kept, and a replayed graph rewrites it in place.
    See ``fixtures/targets/plain_module.py`` for a worked example.
    """

    def __init__(self, module: Any, inputs: dict[str, Any], feed: Callable[[int], dict[str, Any]],
                 device: Any, name: str = "forward") -> None:
        self.module, self.inputs, self.feed = module, inputs, feed
        self.devices = [device]
        self._name = name
        self._out: Any = None

    def stage(self, step: int) -> None:
        for key, value in self.feed(step).items():
            buf = self.inputs[key]
            if hasattr(value, "shape"):
                buf.copy_(value, non_blocking=bool(getattr(value, "is_pinned", lambda: False)()))
            else:
                buf.fill_(value)

    def _forward(self) -> None:
        self._out = self.module(**self.inputs)

    def regions(self) -> list[Region]:
        source = _source_of(self.module)
        return [Region(self._name, self._forward, device=self.devices[0], source=source,
                       extra={"entry": f"{source.rsplit(':', 1)[0]}:{type(self.module).__qualname__}.forward"} if source else {})]

    def output(self) -> Any:
        return self._out


def _source_of(module: Any) -> str:
    forward = getattr(type(module), "forward", None)
    code = getattr(forward, "__code__", None)
    if code is None:
        return ""
    from graphlint.paths import display_path

    return f"{display_path(code.co_filename)}:{code.co_firstlineno}"


DEFAULT_TARGET = "dsv4.target:make_target"


class TargetError(ValueError):
    """The target spec, its options or the factory are unusable; the CLI exits 2 on it.

    A factory raises it for options it does not accept (an unknown name or value), so that a
    typo is a usage error (exit 2), not a probe crash (exit 1). It is a ``ValueError``, so a
    factory's callers that expect one keep working.
    """


def check_options(factory: Callable[..., Any], options: dict[str, Any], where: str = "--option") -> None:
    """Refuse, before any probe runs, options that the factory's signature cannot take."""
    import inspect

    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):  # a builtin or C callable: nothing to check
        return
    try:
        signature.bind(["cpu"], **options)
    except TypeError as exc:
        raise TargetError(f"{where}: {getattr(factory, '__qualname__', factory)}(devices, ...) {exc}") from None


def load_factory(spec: str) -> Callable[..., Any]:
    """``path/to/file.py:factory`` or ``package.module:factory`` -> the factory callable.

    The target's project goes on ``sys.path`` first, as pytest's rootdir does for tests: see
    :mod:`graphlint.dynamic.loading` (an uninstalled project's target imports its own package)."""
    from pathlib import Path

    from graphlint.dynamic import loading

    where, sep, name = spec.rpartition(":")
    if not sep or not where or not name:
        raise TargetError(f"--target must look like FILE.py:FACTORY or module:FACTORY, got {spec!r}")
    if where.endswith(".py"):
        path = Path(where)
        if not path.is_file():
            raise TargetError(f"target file {where} does not exist")
        try:
            module = loading.import_file(path)
        except Exception as exc:  # the user's file is broken: say where, not "graphlint bug"
            raise TargetError(f"cannot load target file {where}: {_located(exc)}") from exc
    else:
        try:
            module = loading.import_module(where)
        except Exception as exc:
            raise TargetError(f"cannot import target module {where}: {_located(exc)}") from exc
    factory = getattr(module, name, None)
    if not callable(factory):
        import difflib

        callables = [n for n in vars(module) if not n.startswith("_") and callable(getattr(module, n, None))]
        guess = difflib.get_close_matches(name, callables, n=1)
        raise TargetError(f"{where} has no callable {name!r}" + (f"; did you mean {where}:{guess[0]}?" if guess else ""))
    return factory


def _located(exc: BaseException) -> str:
    """``Type: message (at file:line)``, the line being where the target's code raised."""
    import traceback

    from graphlint.dynamic.frames import error_line, is_user_file

    if isinstance(exc, SyntaxError):
        where = f"{exc.filename}:{exc.lineno}"
    else:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if is_user_file(f.filename)]
        where = f"{frames[-1].filename}:{frames[-1].lineno}" if frames else ""
    return error_line(exc, limit=None) + (f" (at {where})" if where else "")


def parse_option(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` with VALUE read as a Python literal when it is one (``3``, ``True``)."""
    import ast

    key, sep, raw = text.partition("=")
    if not sep or not key.isidentifier():
        raise TargetError(f"--option must look like KEY=VALUE, got {text!r}")
    try:
        return key, ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        return key, raw
