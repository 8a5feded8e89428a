"""Stale buffer addresses (GL292): a captured graph reads the tensors it read at capture time.

A graph holds device addresses, not Python names. When ``stage()`` (or a region that still runs
eagerly) rebinds a buffer a graph reads -- ``self._tokens = torch.tensor([token], device=...)``
instead of ``self._tokens.copy_(...)`` -- the graph keeps reading the old tensor: stale values
while its memory lives, whatever the allocator puts there once it is freed (on the H200 the dsv4
eager decoder's embedding graph read freed token ids and tripped a device-side assert).

So, per graph instance: while a region is captured, every tensor it reads from outside itself is
recorded with its ``data_ptr()``, shape and dtype, and named by its path from the target
(:mod:`graphlint.dynamic.reach`). At replay time, Python that still runs -- ``stage()`` and the
eager regions -- is followed by a check of those paths; before a graph is replayed, any input
whose path was rebound there and now holds a different tensor is a :class:`Moved` record, and the
graph is not replayed again (it would read freed memory). A path rebound only by the capture of
an earlier region is not checked: chained graphs pass tensors by address, and the Python name
lagging behind is harmless.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import inspect
from dataclasses import dataclass
from typing import Any, Iterator

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from graphlint.dynamic import reach
from graphlint.dynamic.frames import UserFrame, function_frame, is_project_file
from graphlint.paths import display_path


def _signature(t: torch.Tensor) -> tuple[int, tuple[int, ...], str]:
    return t.data_ptr(), tuple(t.shape), str(t.dtype).removeprefix("torch.")


def _spell(sig: tuple[int, tuple[int, ...], str]) -> str:
    return f"{sig[2]}{list(sig[1])} at 0x{sig[0]:x}"


@dataclass(frozen=True)
class Read:
    """A tensor a captured region read from outside itself (at capture time)."""

    region: str
    path: reach.Path
    signature: tuple[int, tuple[int, ...], str]


@dataclass(frozen=True)
class Moved:
    """A graph's input that Python rebound after the capture: the graph reads the old tensor."""

    region: str
    step: int
    name: str  # the path, spelt like the engine's code
    before: str
    after: str
    rebound_by: str  # "stage()" or the eager region that rebound it
    where: UserFrame | None


class _ReadRecorder(TorchDispatchMode):
    """Tensors an op reads that no earlier op of the region produced."""

    def __init__(self) -> None:
        super().__init__()
        self.produced: dict[int, torch.Tensor] = {}  # kept alive, so ids are not reused meanwhile
        self.reads: dict[int, torch.Tensor] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        for leaf in tree_flatten((args, kwargs))[0]:
            if isinstance(leaf, torch.Tensor) and id(leaf) not in self.produced:
                self.reads.setdefault(id(leaf), leaf)
        out = func(*args, **kwargs)
        for leaf in tree_flatten(out)[0]:
            if isinstance(leaf, torch.Tensor):
                self.produced.setdefault(id(leaf), leaf)
        return out


def _is_tensor(obj: Any) -> bool:
    return isinstance(obj, torch.Tensor)


class AddressWatch:
    """The stale-address bookkeeping of one graph instance (see the module doc)."""

    def __init__(self, target: Any, regions: list) -> None:
        self.target = target
        self.roots: dict[str, Any] = {"target": target}
        self.roots.update({f"region {r.name}": r.fn for r in regions})
        self.functions = {r.name: r.fn for r in regions}
        self.reads: dict[str, list[Read]] = {}
        self.current: dict[reach.Path, tuple] = {}  # last seen signature of every watched path
        self.rebound: dict[reach.Path, tuple[str, int]] = {}  # path -> (who rebound it, step), after capture
        self.error = ""

    @contextlib.contextmanager
    def recording(self, region) -> Iterator[None]:
        """Wrap the capture of ``region``: what it reads from outside becomes watched paths."""
        recorder = _ReadRecorder()
        with recorder:
            yield
        try:
            wanted = {id(t): t for t in recorder.reads.values()}
            paths = {id(t): p for p, t in reach.tensors_by_path(self.roots, _is_tensor).items() if id(t) in wanted}
            self.reads[region.name] = [Read(region.name, paths[key], _signature(t))
                                       for key, t in wanted.items() if key in paths]
            for read in self.reads[region.name]:
                self.current.setdefault(read.path, read.signature)
        except Exception as exc:  # noqa: BLE001 - the check is lost for this region, not the probe
            self.error = f"{type(exc).__name__}: {exc}"

    def captured_step_done(self) -> None:
        """After the capture step: what every watched path holds now is the baseline."""
        self._look("", 0, record=False)

    def ran(self, who: str, step: int) -> None:
        """Python ran at replay time (``stage()`` or an eager region): note the paths it rebound."""
        self._look(who, step, record=True)

    def _look(self, who: str, step: int, *, record: bool) -> None:
        for path in list(self.current):
            now = reach.resolve(self.roots, path)
            sig = _signature(now) if isinstance(now, torch.Tensor) else None
            if sig != self.current[path]:
                self.current[path] = sig
                if record:
                    self.rebound[path] = (who, step)

    def moved(self, region, step: int) -> list[Moved]:
        """The inputs of ``region``'s graph that Python rebound to another tensor."""
        out = []
        for read in self.reads.get(region.name, ()):
            if read.path not in self.rebound or self.current.get(read.path) == read.signature:
                continue
            who, when = self.rebound[read.path]
            after = self.current.get(read.path)
            out.append(Moved(region.name, step, reach.describe(read.path), _spell(read.signature),
                             _spell(after) if after else "nothing (the name is gone)", who,
                             self._rebinding_line(read.path, who)))
        return out

    def _rebinding_line(self, path: reach.Path, who: str) -> UserFrame | None:
        fn = self.target.stage if who == "stage()" else self.functions.get(who)
        owner, attr = reach.owner_and_attr(self.roots, path)
        name = function_frame(fn).function if fn is not None and function_frame(fn) else ""
        if owner is not None and attr:
            found = assignment_lines(type(owner), attr)
            best = [a for a in found if a[2] == name] or [a for a in found if a[2] != "__init__"]
            if best:
                path_, line, function = best[0]
                return UserFrame(path_, line, function)
        return function_frame(fn) if fn is not None else None


def assignment_lines(cls: type, attr: str) -> list[tuple[str, int, str]]:
    """``(path, line, function)`` of every ``self.<attr> = ...`` in ``cls`` and its project bases."""
    out = []
    for klass in cls.__mro__:
        try:
            filename = inspect.getsourcefile(klass)
        except TypeError:
            continue
        if not filename or not is_project_file(filename):
            continue
        out += [(display_path(filename), line, fn) for line, fn in _assignments(filename, klass.__name__, attr)]
    return out


@functools.lru_cache(maxsize=256)
def _parsed(filename: str) -> ast.Module | None:
    try:
        with open(filename, encoding="utf-8") as fh:
            return ast.parse(fh.read())
    except (OSError, SyntaxError, ValueError):
        return None


def _assignments(filename: str, class_name: str, attr: str) -> list[tuple[int, str]]:
    tree = _parsed(filename)
    out = []
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == class_name) if tree else ():
        for fn in (n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
            for node in ast.walk(fn):
                targets = (node.targets if isinstance(node, ast.Assign)
                           else [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else [])
                for t in targets:
                    if (isinstance(t, ast.Attribute) and t.attr == attr and isinstance(t.value, ast.Name)
                            and t.value.id == "self"):
                        out.append((node.lineno, fn.name))
    return sorted(out)
