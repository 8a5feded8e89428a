"""Measurement flags that are off unless asked for: what they guard is at most a warning.

``if benchmark: torch.cuda.synchronize()`` in a decode loop syncs every step -- but only when the
user passes ``--benchmark``. A flag named for measurement or diagnostics (:data:`MEASUREMENT`:
benchmark, timing, profile, verbose, debug, logging, trace ...) whose default is off (False or None)
is not on the default decode path: what runs under it is reported as a warning, never an error
(the coordinator's decision, docs/check.md "Severity follows the harm"). A flag on by default, or
one whose default is not visible in the file, keeps the finding's severity: the timers a step
always starts (``self.timers("decode").start()``) are the step's own cost.

The default is read from the file itself:

- a parameter of the enclosing function with a literal default (``def generate(..., benchmark=False)``);
- a module-level name bound to a falsy literal, to ``os.environ.get("X")`` without a default, or to
  ``args.<dest>`` of an ``argparse`` option whose default is off (``action="store_true"``,
  ``default=False`` / ``None``, or no default at all);
- ``self.<attr>`` that the class's ``__init__`` binds to such a value (a literal, a parameter with
  an off default, an off option);
- ``args.<dest>`` of an off option directly, and ``os.environ.get("X")`` / ``os.getenv("X")``.

The names in guards (``[tool.graphlint] guards``: ``*debug*``, ``*verbose*``, ``*profile*`` ...)
are stronger: their bodies are never hot at all. This module only caps severity.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.cstwalk import every_child
from graphlint.static.names import name_matcher, resolve

#: names of measurement and diagnostics switches (case-insensitive fnmatch patterns)
#: (``log`` alone and named logging switches: ``log_mel``, ``log_probs``, ``A_log`` are mathematics)
MEASUREMENT = ("*bench*", "*timing*", "*timer*", "*measure*", "*profil*", "*verbose*", "*debug*",
               "*trace*", "*tracing*", "log", "*logging*", "should_log", "log_stat*", "log_file",
               "log_every*", "log_interval", "log_step*", "log_time*")
_MEASURES = name_matcher(MEASUREMENT, ignore_case=True)
#: switches that turn ``torch.compile`` on (``use_torch_compile``, ``compile``): a capture made only
#: under one that is off by default leaves the default path eager (:attr:`.facts.RegionDecl.opt_in`)
COMPILE_SWITCHES = name_matcher(("*compile*",), ignore_case=True)
ENV_READERS = ("os.environ.get", "os.getenv")
_OFF = (None, False, 0, "")
_UNKNOWN = object()


def _literal(node: cst.BaseExpression | None):
    """The value of a literal off/on switch (None, True, False, an int or a string), else unknown."""
    if isinstance(node, cst.Name) and node.value in ("None", "True", "False"):
        return {"None": None, "True": True, "False": False}[node.value]
    if isinstance(node, cst.Integer):
        return int(node.value) if node.value.isdigit() else _UNKNOWN
    if isinstance(node, cst.SimpleString):
        try:
            return node.evaluated_value
        except Exception:
            return _UNKNOWN
    return _UNKNOWN


class OptInFlags:
    """The off-by-default switches of one module (see the module docstring), each read only when a
    test first names a measurement switch of that kind: most files have none."""

    def __init__(self, module: cst.Module, imports: dict[str, str]):
        self.module, self.imports = module, imports
        self._options: set[str] | None = None  # argparse dests whose default is off
        self._names: set[str] | None = None  # module-level names bound to an off switch
        self._attrs: dict[str, set[str]] | None = None  # class -> ``self`` attributes its __init__ binds off

    def options(self) -> set[str]:
        """The dests of the module's ``add_argument`` calls that are off by default (a whole walk:
        only for a switch read through an option, in a file that imports ``argparse``)."""
        if self._options is None and not any(t == "argparse" or t.startswith("argparse.")
                                                 for t in self.imports.values()):
            self._options = set()  # no parser here: its options are not this file's to read
        if self._options is None:
            self._options = {dest for node in _walk(self.module) if isinstance(node, cst.Call)
                             and isinstance(node.func, cst.Attribute) and node.func.attr.value == "add_argument"
                             and (dest := _off_option(node))}
        return self._options

    def names(self) -> set[str]:
        if self._names is None:
            self._names = {target.value for stmt in self.module.body for target, value in _assignments(stmt)
                           if isinstance(target, cst.Name) and _MEASURES.match(target.value)
                           and self.off_value(value, {})}
        return self._names

    def attrs(self, cls: str) -> set[str]:
        if self._attrs is None:
            self._attrs = {}
            self._classes(self.module.body, "")
        return self._attrs.get(cls, set())

    def _classes(self, body, prefix: str) -> None:
        for stmt in body:
            if not isinstance(stmt, cst.ClassDef):
                continue
            qual = f"{prefix}{stmt.name.value}"
            for item in stmt.body.body:
                if isinstance(item, cst.FunctionDef) and item.name.value == "__init__":
                    defaults = {p.name.value: _literal(p.default) for p in
                                (*item.params.params, *item.params.kwonly_params) if p.default is not None}
                    for node in _walk(item.body):
                        for target, value in _assignments(node):
                            if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) \
                                    and target.value.value == "self" and _MEASURES.match(target.attr.value) \
                                    and self.off_value(value, defaults):
                                self._attrs.setdefault(qual, set()).add(target.attr.value)
            self._classes(stmt.body.body, f"{qual}.")

    def off_value(self, value: cst.BaseExpression, defaults: dict) -> bool:
        """Whether ``value`` is a switch that is off unless the user turns it on."""
        if isinstance(value, cst.Name) and value.value in defaults:
            return defaults[value.value] in _OFF
        found = _literal(value)
        if found is not _UNKNOWN:
            return found in _OFF
        if isinstance(value, cst.Attribute):
            return value.attr.value in self.options()
        return self.env_off(value)

    def env_off(self, value: cst.BaseExpression) -> bool:
        """``os.environ.get("X")`` / ``os.getenv("X")`` with no default or an off one."""
        if not (isinstance(value, cst.Call) and resolve(value.func, self.imports) in ENV_READERS and value.args):
            return False
        return len(value.args) < 2 or _literal(value.args[1].value) in _OFF

    def guard(self, test: cst.BaseExpression, cls: str, defaults: dict, names=_MEASURES) -> str | None:
        """The measurement switch (``names``: or a compile switch, :data:`COMPILE_SWITCHES`), off by
        default, that ``if test:`` needs on to run its body."""
        if type(test) is cst.BooleanOperation and type(test.operator) is cst.And:
            return self.guard(test.left, cls, defaults, names) or self.guard(test.right, cls, defaults, names)
        if type(test) is cst.Name:
            name = test.value
            if not names.match(name):
                return None
            if name in defaults:
                off = defaults[name] is not None and defaults[name][0] == "c" and defaults[name][1] in _OFF
            else:
                off = name in self.names()
        elif type(test) is cst.Attribute:
            name = test.attr.value
            if not names.match(name):
                return None
            owner = test.value
            if type(owner) is cst.Name and owner.value == "self":
                off = name in self.attrs(cls)
            else:
                off = name in self.options()
        elif names is _MEASURES and _names_measure(test) and self.env_off(test):
            name, off = str(_literal(test.args[0].value)), True
        else:
            return None
        return name if off and name else None


def measured(cond: tuple) -> bool:
    """Whether a call's branch conditions (:mod:`.valuefacts` IR, a conjunction) need a measurement
    switch on: ``if args.benchmark:``, or the ``else`` of ``if not benchmark:``."""
    for c in cond:
        while c[0] == "not" and c[1][0] == "not":
            c = c[1][1]
        if c[0] == "and" and (measured((c[1],)) or measured((c[2],))):
            return True
        if c[0] == "t" and c[1] is not None and c[1][0] in ("f", "p") and _MEASURES.match(c[1][1]):
            return True
    return False


def _names_measure(test: cst.BaseExpression) -> bool:
    if type(test) is cst.BooleanOperation:
        return _names_measure(test.left) or _names_measure(test.right)
    if type(test) is cst.Attribute:
        return bool(_MEASURES.match(test.attr.value))
    if type(test) is cst.Name:
        return bool(_MEASURES.match(test.value))
    if type(test) is cst.Call and test.args and type(test.args[0].value) is cst.SimpleString:
        return bool(_MEASURES.match(str(_literal(test.args[0].value))))
    return False


def _off_option(call: cst.Call) -> str | None:
    """The dest of ``parser.add_argument("--benchmark", action="store_true")`` when its default is off."""
    dest, action, default, has_default = None, None, None, False
    for arg in call.args:
        key = arg.keyword.value if arg.keyword is not None else None
        if key is None and isinstance(arg.value, cst.SimpleString) and dest is None:
            text = _literal(arg.value)
            if isinstance(text, str) and text.startswith("--"):
                dest = text[2:].replace("-", "_")
        elif key == "dest":
            text = _literal(arg.value)
            dest = text if isinstance(text, str) else dest
        elif key == "action":
            action = _literal(arg.value)
        elif key == "default":
            has_default, default = True, _literal(arg.value)
    if not dest:
        return None
    if has_default:
        return dest if default in _OFF else None
    return dest if action in (None, "store_true", "store_const", "count", "append") else None


def _assignments(node: cst.CSTNode):
    stmts = node.body if type(node) is cst.SimpleStatementLine else (node,)
    for small in stmts:
        if type(small) is cst.Assign and len(small.targets) == 1:
            yield small.targets[0].target, small.value
        elif type(small) is cst.AnnAssign and small.value is not None:
            yield small.target, small.value


def _walk(node: cst.CSTNode):
    stack = [node]
    while stack:
        item = stack.pop()
        yield item
        stack.extend(every_child(item))
