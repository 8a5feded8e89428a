"""How much of what really runs each decode step does ``graphlint check`` mark hot, in the same role?

    python bench/record_vs_static.py [--case NAME ...] [--json FILE] [--steps N]

Each case is recorded on the CPU, then checked statically *without* the record:

- ``dsv4-eager``, ``dsv4-ab-graph``, ``dsv4-full-graph``: the bundled engine's three decoders
  through the target protocol (what ``graphlint inventory --record`` writes: ``stage()`` is host,
  capturable regions captured, eager regions eager; one step after a warm-up), checked as
  ``graphlint check`` checks this repository (``dsv4/``, with its configuration);
- ``hf-llama``, ``hf-qwen2``, ``hf-qwen3``, ``hf-mistral``, ``hf-gemma``: a tiny model of each
  architecture decoding with ``model.generate`` (bench/hf_generate.py) under ``graphlint record
  --source <transformers>``: its eager decode step and loop; checked over the files of every
  transformers module the run imported (:func:`imported_files`, in a fresh interpreter).

For each recorded (function, role) the static contexts are looked up: ``same`` when the function
is hot in the role's context (captured -> graph, host -> host, eager and loop -> eager), else a
miss, listed with the recorded callers of the function (the recorder keeps the run's call edges
in memory for this) and how static sees them: a caller hot in the right role means the call from
it is not resolved (a resolution gap), no recorded caller means the function is entered from
outside the analysed code (the harness, a library).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

CONTEXT_OF = {"captured": "graph", "host": "host", "eager": "eager", "loop": "eager"}
DSV4 = ("eager", "ab-graph", "full-graph")
HF = ("llama", "qwen2", "qwen3", "mistral", "gemma")
CASES = [f"dsv4-{d}" for d in DSV4] + [f"hf-{m}" for m in HF]


def record_dsv4(decoder: str):
    """(functions {(path, qual): {role: calls}}, call edges {(caller, callee)}) of one protocol step."""
    import torch

    from dsv4.target import make_target
    from graphlint.dynamic import declared
    from graphlint.dynamic.frames import is_own_file
    from graphlint.dynamic.recorder import Recorder
    from graphlint.dynamic.target import regions_of

    target = make_target([torch.device("cpu")], decoder=decoder, n_layers=2, compress_ratios=(0, 4), max_seq_len=16)
    regions = regions_of(target)
    with torch.no_grad():
        target.stage(0)
        for region in regions:  # the warm-up step: lazy init is no decode step
            region.fn()
        recorder = Recorder(is_own_file, detect_steps=True)
        recorder.steps.edges = set()
        declared.ACTIVE = recorder
        try:
            declared.run_step(target, regions, declared.RECORDED_STEP)
        finally:
            declared.ACTIVE = None
    return _named(recorder, lambda code: os.path.relpath(code.co_filename, ROOT))


def record_hf(model: str, steps: int):
    import transformers

    import hf_generate
    from graphlint.dynamic.record_command import Namer, Sources
    from graphlint.dynamic.recorder import Recorder

    source = os.path.dirname(transformers.__file__)
    recorder = Recorder(Sources([source], str(ROOT)), detect_steps=True)
    recorder.steps.edges = set()
    with recorder.recording():
        hf_generate.main(["--model", model, "--steps", str(steps)])
    namer = Namer(str(ROOT), [source], str(ROOT))
    functions, edges = _named(recorder, lambda code: namer(code)[0])
    return functions, edges, os.path.dirname(source), fresh_imports(model, steps)


def fresh_imports(model: str, steps: int) -> list[str]:
    """:func:`imported_files` of the same run in a fresh interpreter: in a process that imported
    more of transformers before (a test worker that built other architectures), ``sys.modules``
    holds more files, and the checked file set -- so the figure -- would depend on that history."""
    code = (f"import sys; sys.path[:0] = [{str(ROOT / 'bench')!r}, {str(ROOT)!r}]; import json, transformers, "
            f"hf_generate, record_vs_static as r, os; hf_generate.main(['--model', {model!r}, '--steps', "
            f"'{steps}']); print('IMPORTED=' + json.dumps(r.imported_files(os.path.dirname(transformers.__file__))))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, cwd=ROOT)
    line = next((ln for ln in run.stdout.splitlines() if ln.startswith("IMPORTED=")), None)
    if line is None:
        raise RuntimeError(f"the fresh run of {model} failed: {run.stderr[-2000:]}")
    return json.loads(line[len("IMPORTED="):])


def imported_files(source: str) -> list[str]:
    """Every module of ``source`` the run imported: the code Python executed, not only the files a
    recorded function lives in. A module none of whose functions ran still binds what the run used
    (``utils/__init__.py`` re-exports ``ModelOutput``; ``modeling_outputs.py`` holds the dataclasses
    the forward returns), so a check over the recorded files alone misses values no check of the
    package would (decided on branch ``resolve``: the bench was wrong, not the check)."""
    prefix = os.path.join(source, "")
    return sorted({f for m in list(sys.modules.values()) if (f := getattr(m, "__file__", None))
                   and f.startswith(prefix) and f.endswith(".py")})


def _named(recorder, path_of):
    from graphlint.dynamic.recorder import qualname

    def name(cid):
        code = recorder.codes[cid]
        qual = qualname(code)
        return None if "<" in qual else (Path(path_of(code)).as_posix(), qual)

    functions = {}
    for cid, roles in recorder.roles().items():
        named = name(cid)
        if named is not None:
            functions[named] = dict(roles)
    edges = {(name(a), name(b)) for a, b in recorder.steps.edges if name(a) and name(b)}
    return functions, edges


def static_contexts(paths: list[str], config_root: Path | None) -> dict[tuple[str, str], set[str]]:
    """(display path, qualname) -> the contexts ``graphlint check`` places it in (no record)."""
    from graphlint.check import run
    from graphlint.check_settings import resolve
    from graphlint.config_file import Config, load_config

    config = load_config(cwd=config_root) if config_root else Config(path=None, root=Path.cwd())
    settings = resolve(config, paths=paths, use_cache=False)
    contexts_out: list = []
    run(settings, contexts_out=contexts_out)
    placement = contexts_out[0].placement
    hot: dict[tuple[str, str], set[str]] = {}
    for context in ("graph", "host", "eager"):
        for fid in [*placement.chains[context], *placement.loop_bodies[context]]:
            hot.setdefault(fid, set()).add(context)
    return hot


def compare(functions: dict, edges: set, hot: dict) -> dict:
    from graphlint.static.options import RecordedEntry
    from graphlint.static.recorded import matched_files

    class Info:  # matched_files needs .path only
        def __init__(self, path):
            self.path = path

    infos = [Info(p) for p in {p for p, _ in hot}]
    files = matched_files(infos, tuple(RecordedEntry(p, q, ()) for p, q in functions))

    def contexts(fn):
        info = files.get(fn[0])
        return hot.get((info.path, fn[1]), set()) if info is not None else set()

    callers: dict = {}
    for caller, callee in edges:
        callers.setdefault(callee, set()).add(caller)
    pairs, misses = 0, []
    for fn, roles in sorted(functions.items()):
        for role in roles:
            pairs += 1
            have = contexts(fn)
            if CONTEXT_OF[role] in have:
                continue
            seen_by = sorted(callers.get(fn, set()) - {fn})
            gap = any(CONTEXT_OF[role] in contexts(c) for c in seen_by)
            why = ("a call from a hot caller is not resolved" if gap else
                   "entered from outside the analysed code" if not seen_by else "its callers are missed too")
            misses.append({"function": f"{fn[0]}:{fn[1]}", "role": role, "static": sorted(have) or ["not hot"],
                           "callers": [f"{p}:{q} ({', '.join(sorted(contexts((p, q)))) or 'not hot'})"
                                       for p, q in seen_by][:4], "why": why})
    return {"recorded": pairs, "same_role": pairs - len(misses),
            "fraction": round((pairs - len(misses)) / pairs, 3) if pairs else None, "misses": misses}


def run_case(case: str, steps: int) -> dict:
    if case.startswith("dsv4-"):
        functions, edges = record_dsv4(case[5:])
        hot = static_contexts(["dsv4"], ROOT)
    else:
        functions, edges, base, imported = record_hf(case[3:], steps)
        files = sorted({os.path.join(base, p) for p, _ in functions} | set(imported))
        with tempfile.TemporaryDirectory() as empty:  # no [tool.graphlint] of this repository
            hot = static_contexts(files, None) if files else {}
            del empty
    return {"case": case, **compare(functions, edges, hot)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", action="append", choices=CASES, help="default: all")
    parser.add_argument("--steps", type=int, default=8, help="decode steps of the recorded HF runs")
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)
    os.chdir(ROOT)
    results = [run_case(case, args.steps) for case in args.case or CASES]
    print("| case | recorded (function, role) | hot in the same role | fraction |")
    print("|---|---|---|---|")
    for r in results:
        print(f"| {r['case']} | {r['recorded']} | {r['same_role']} | {r['fraction']} |")
    for r in results:
        for m in r["misses"]:
            print(f"{r['case']}: {m['function']} ({m['role']}): static {', '.join(m['static'])}; {m['why']}"
                  + (f" [callers: {'; '.join(m['callers'])}]" if m["callers"] else ""))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
