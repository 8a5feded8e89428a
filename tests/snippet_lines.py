"""What each shell snippet line of README.md and docs/*.md must do (tests/test_snippets.py runs them):
the exit status it gives when run as written in a throwaway copy of the checkout, or why it is not
run here, and what it must also print."""

from __future__ import annotations

INSTALL_TORCH = "python3 -m venv .venv && . .venv/bin/activate && pip install torch==2.13.0 -e '.[engine,plots]' && "
CI = "python3 -m venv .venv && . .venv/bin/activate && pip install --no-compile torch==2.13.0 -e '.[test]' && python -m pytest -q -m \"slow or not slow\" -n 2"
TORCH_FREE = "python3 -m venv .venv && . .venv/bin/activate && pip install -e . && { graphlint check dsv4/; echo \"graphlint check: exit status $? (1 expected)\"; }"

#: command (its trailing comment dropped) -> exit status when run as written, or why it is not run.
LINES: dict[str, int | str] = {
    TORCH_FREE: "test_the_torch_free_first_run_works_as_written (a fresh venv in a copy of the checkout)",
    INSTALL_TORCH + "{ graphlint check dsv4/; graphlint inventory -o inventory.md; echo \"graphlint inventory: exit "
    "status $? (1 expected)\"; }": 0,  # run after its install prefix (INSTALL_TORCH): see _as_run
    CI: ".ci/run runs this very line on every CI run",
    "graphlint check dsv4/": 1,
    "graphlint check src/ --entry src/engine.py:Decoder.step": 1,
    "graphlint entries src/": 0,
    "graphlint explain GL101": 0,
    "graphlint inventory --target my_engine/target.py:make_target -o inventory.md": 0,
    "graphlint capture-test --target my_engine/target.py:make_target": 0,
    "graphlint check --select host-sync,GL3 --ignore GL305": 1,
    "graphlint check --format sarif -o graphlint.sarif": 1,
    "graphlint check --statistics": 1,
    "graphlint check --show-chain --show-suppressed": 1,
    "graphlint rules": 0,
    "graphlint check --write-baseline .graphlint-baseline.json": 0,
    "graphlint check --baseline .graphlint-baseline.json": 0,
    "python bench/realcode_fetch.py /tmp/realcode && python bench/realcode_score.py /tmp/realcode --markdown":
        "clones six public engines from GitHub (network)",
    "python bench/realcode_fetch.py /tmp/holdout --manifest bench/realcode/holdout.toml": "clones engines from GitHub (network)",
    "python bench/realcode_score.py /tmp/holdout --manifest bench/realcode/holdout.toml --markdown":
        "scores the engines the line above clones (network)",
    "python -m dsv4 generate --preset small --steps 128 --decoder full-graph":
        "the H200's size (274 M random parameters, minutes on a 2-core CPU); tests/dsv4/test_dsv4_cli.py runs it tiny",
    "python bench/decode_bench.py --preset small --steps 128 --repeats 5":
        "a GPU benchmark of the small preset (minutes on a CPU); tests/dsv4/test_dsv4_cli.py runs the bench tiny",
    "python -m dsv4.faults list": 0,
    "python -m dsv4 generate --fault bincount-counts --device cpu": 0,
    "graphlint inventory --option fault=mhc-item": 1,
    "python -m dsv4.faults report -o seedlab.md --json seedlab.json":
        "probes all 33 faults (minutes on a CPU); tests/dsv4/test_seedlab_cli.py runs `report` on two",
    "graphlint inventory": "README's second line runs this command, writing the report to inventory.md instead of "
                           "stdout",
    "graphlint inventory --decoder full-graph --preset small":
        "the small preset (274 M parameters) is the H200's size: 40 s of a 2-core CPU for a tracer-only run; the same "
        "decoder, tiny, runs in the capture-test line",
    "graphlint inventory --target my_engine/target.py:make_target --option dim=64 -o inventory.md": 0,
    "graphlint inventory --gpus 0,2 --steps 512 --format json": "needs CUDA devices 0 and 2 (without them: exit 2)",
    "graphlint capture-test --decoder full-graph --soak": 0,
    "graphlint inventory --probe compile":
        "torch.compile of every region: 140 s of CPU here; tests/dynamic/test_compile_probe.py runs the probe small",
    "graphlint inventory --target fixtures/targets/plain_module.py:make_target": 0,
    "graphlint inventory --target graphlint.targets.hf:make_target --option model=tiny-llama": 0,
    "graphlint inventory --target graphlint.targets.hf:make_target --option model=path/to/config.json --option "
    "cache=dynamic": 1,
    "graphlint capture-test --target graphlint.targets.hf:make_target --option model=path/to/saved_model": 0,
    "graphlint inventory --target graphlint.targets.hf:make_target --option arch=mixtral --option batch=4 --option "
    "dtype=bfloat16": 0,
    "graphlint inventory --decoder full-graph --record decode-path.json": 0,
    "graphlint record -o decode-path.json -- python bench/my_decode_bench.py": 0,
    'git add decode-path.json && git commit -m "the recorded decode path"': 0,  # the copy is made a git repository
    "graphlint check --decode-path decode-path.json": 1,
    "graphlint record -- -m mypkg.serve --smoke-test": 0,
    "graphlint record -o decode-path.json -- python bench/decode_bench.py --steps 32":
        "three decoders of the small preset (274 M parameters), 5 repeats: 39 s of a 2-core CPU under the recorder; "
        "README's record line records a tiny dsv4 decode the same way",
    "graphlint record -- my-engine-bench --steps 32":
        "a console entry point of the user's installed package; tests/dynamic/test_record.py::"
        "test_module_and_entry_point_commands records through one",
    "graphlint record --source . --source .venv/lib/python3.12/site-packages/transformers -- python gen.py":
        "a user's gen.py and their Python 3.12 venv with transformers; tests/dynamic/test_record.py::"
        "test_only_the_sources_count and tests/cli/test_recorded_decode_path.py::"
        "test_a_library_recorded_with_source_is_matched_by_path_suffix cover --source",
    "graphlint zoo --list": 0,
    "graphlint zoo --arch mixtral --dtype float32 --steps 16": 0,
    "graphlint zoo --arch llama,mixtral,gemma2":
        "with no GPU it is the --cpu line's run (25 s here), which tests/dynamic/test_zoo.py::"
        "test_the_zoo_on_three_architectures_with_the_tracer_only makes",
    "graphlint zoo --arch llama,mixtral,gemma2 --cpu":
        "25 s here: tests/dynamic/test_zoo.py::test_the_zoo_on_three_architectures_with_the_tracer_only runs it "
        "(-o and --drafts in a temporary directory)",
    "graphlint zoo --arch all --budget 540 -o reports/zoo-h200-DATE.md --drafts reports/zoo/drafts":
        "every architecture on a GPU, up to 9 minutes",
    "graphlint zoo --from reports/zoo-h200-DATE.json -o again.md":
        "re-renders the JSON of the GPU run above (none is committed); tests/dynamic/test_zoo.py::"
        "test_the_zoo_on_three_architectures_with_the_tracer_only re-renders a CPU run's",
    "python bench/realcode_fetch.py /tmp/fresh --manifest bench/realcode/fresh.toml": "clones engines from GitHub (network)",
    "python bench/realcode_score.py /tmp/fresh --manifest bench/realcode/fresh.toml --markdown":
        "scores the engines the line above clones (network)",
    "python bench/fuzz.py --files 10000": "10,000 mutated files: minutes of both cores; tests/static/test_static_fuzz.py "
                                          "runs the fuzzer on a few",
    "python bench/fuzz.py --files 300 --seed 7 --keep /tmp/crashers": "300 mutated files of the installed torch: about "
                                                                       "a minute; tests/static/test_static_fuzz.py runs "
                                                                       "the fuzzer on a few",
    "python bench/realcode_score.py /tmp/fresh --manifest bench/realcode/fresh.toml --plants --markdown":
        "scores the engines the line above clones (network)",
    "python bench/realcode_fetch.py /tmp/fresh2 --manifest bench/realcode/fresh2.toml": "clones engines from GitHub (network)",
    "python bench/realcode_score.py /tmp/fresh2 --manifest bench/realcode/fresh2.toml --markdown":
        "scores the engines the line above clones (network)",
    "python bench/realcode_score.py /tmp/fresh2 --manifest bench/realcode/fresh2.toml --plants --markdown":
        "scores the engines the line above clones (network)",
    "python bench/realcode_fetch.py /tmp/fresh3 --manifest bench/realcode/fresh3.toml": "clones engines from GitHub (network)",
    "python bench/realcode_score.py /tmp/fresh3 --manifest bench/realcode/fresh3.toml --markdown":
        "scores the engines the line above clones (network)",
    "python bench/realcode_score.py /tmp/fresh3 --manifest bench/realcode/fresh3.toml --plants --markdown":
        "scores the engines the line above clones (network)",
    "python bench/realcode_fetch.py /tmp/fresh4 --manifest bench/realcode/fresh4.toml": "clones engines from GitHub (network)",
    "python bench/realcode_score.py /tmp/fresh4 --manifest bench/realcode/fresh4.toml --markdown":
        "scores the engines the line above clones (network)",
    "python bench/realcode_score.py /tmp/fresh4 --manifest bench/realcode/fresh4.toml --plants --markdown":
        "scores the engines the line above clones (network)",
    'python bench/realcode_entries.py /tmp/fresh4 --manifest bench/realcode/fresh4.toml --note "..." > bench/realcode/fresh4/entries.md':
        "lists the entries of the engines the first line clones (network)",
    "python bench/realcode_fetch.py /tmp/fresh5 --manifest bench/realcode/fresh5.toml": "clones engines from GitHub (network)",
    "python bench/realcode_score.py /tmp/fresh5 --manifest bench/realcode/fresh5.toml --markdown":
        "scores the engines the line above clones (network)",
    "python bench/realcode_score.py /tmp/fresh5 --manifest bench/realcode/fresh5.toml --plants --markdown":
        "scores the engines the line above clones (network)",
    'python bench/realcode_entries.py /tmp/fresh5 --manifest bench/realcode/fresh5.toml --note "..." > bench/realcode/fresh5/entries.md':
        "lists the entries of the engines the first line clones (network)",
    "python bench/realcode_fetch.py /tmp/fresh6 --manifest bench/realcode/fresh6.toml": "clones engines from GitHub (network)",
    "python bench/realcode_score.py /tmp/fresh6 --manifest bench/realcode/fresh6.toml --markdown":
        "scores the engines the line above clones (network)",
    "python bench/realcode_score.py /tmp/fresh6 --manifest bench/realcode/fresh6.toml --plants --markdown":
        "scores the engines the line above clones (network)",
    'python bench/realcode_entries.py /tmp/fresh6 --manifest bench/realcode/fresh6.toml --note "..." > bench/realcode/fresh6/entries.md':
        "lists the entries of the engines the first line clones (network)",
    "python bench/realcode_fetch.py /tmp/fresh7 --manifest bench/realcode/fresh7.toml": "clones engines from GitHub (network)",
    "python bench/realcode_score.py /tmp/fresh7 --manifest bench/realcode/fresh7.toml --markdown":
        "scores the engines the line above clones (network)",
    "python bench/realcode_score.py /tmp/fresh7 --manifest bench/realcode/fresh7.toml --plants --markdown":
        "scores the engines the line above clones (network)",
    'python bench/realcode_entries.py /tmp/fresh7 --manifest bench/realcode/fresh7.toml --note "..." > bench/realcode/fresh7/entries.md':
        "lists the entries of the engines the first line clones (network)",
    "python bench/realcode_fetch.py /tmp/fresh8 --manifest bench/realcode/fresh8.toml": "clones engines from GitHub (network)",
    "python bench/realcode_score.py /tmp/fresh8 --manifest bench/realcode/fresh8.toml --markdown":
        "scores the engines the line above clones (network)",
    "python bench/realcode_score.py /tmp/fresh8 --manifest bench/realcode/fresh8.toml --plants --markdown":
        "scores the engines the line above clones (network)",
    'python bench/realcode_entries.py /tmp/fresh8 --manifest bench/realcode/fresh8.toml --note "..." > bench/realcode/fresh8/entries.md':
        "lists the entries of the engines the first line clones (network)",
    "python bench/realcode_fetch.py /tmp/fresh9 --manifest bench/realcode/fresh9.toml": "clones engines from GitHub (network)",
    "python bench/realcode_score.py /tmp/fresh9 --manifest bench/realcode/fresh9.toml --markdown":
        "scores the engines the line above clones (network)",
    "python bench/realcode_score.py /tmp/fresh9 --manifest bench/realcode/fresh9.toml --plants --markdown":
        "scores the engines the line above clones (network)",
    'python bench/realcode_entries.py /tmp/fresh9 --manifest bench/realcode/fresh9.toml --note "..." > bench/realcode/fresh9/entries.md':
        "lists the entries of the engines the first line clones (network)",
    "python bench/realcode_fetch.py /tmp/fresh10 --manifest bench/realcode/fresh10.toml": "clones engines from GitHub (network)",
    "python bench/realcode_score.py /tmp/fresh10 --manifest bench/realcode/fresh10.toml --markdown":
        "scores the engines the line above clones (network)",
    "python bench/realcode_score.py /tmp/fresh10 --manifest bench/realcode/fresh10.toml --plants --markdown":
        "scores the engines the line above clones (network)",
    'python bench/realcode_entries.py /tmp/fresh10 --manifest bench/realcode/fresh10.toml --note "..." > bench/realcode/fresh10/entries.md':
        "lists the entries of the engines the first line clones (network)",
    "python bench/realcode_fetch.py /tmp/fresh11 --manifest bench/realcode/fresh11.toml": "clones engines from GitHub (network)",
    "python bench/realcode_score.py /tmp/fresh11 --manifest bench/realcode/fresh11.toml --markdown":
        "scores the engines the line above clones (network)",
    "python bench/realcode_score.py /tmp/fresh11 --manifest bench/realcode/fresh11.toml --plants --markdown":
        "scores the engines the line above clones (network)",
    'python bench/realcode_entries.py /tmp/fresh11 --manifest bench/realcode/fresh11.toml --note "..." > bench/realcode/fresh11/entries.md':
        "lists the entries of the engines the first line clones (network)",
    "python bench/realcode_fetch.py /tmp/fresh12 --manifest bench/realcode/fresh12.toml": "clones engines from GitHub (network)",
    "python bench/realcode_score.py /tmp/fresh12 --manifest bench/realcode/fresh12.toml --markdown":
        "scores the engines the line above clones (network)",
    "python bench/realcode_score.py /tmp/fresh12 --manifest bench/realcode/fresh12.toml --plants --markdown":
        "scores the engines the line above clones (network)",
    'python bench/realcode_entries.py /tmp/fresh12 --manifest bench/realcode/fresh12.toml --note "..." > bench/realcode/fresh12/entries.md':
        "lists the entries of the engines the first line clones (network)",
    "python bench/realcode_fetch.py /tmp/fresh13 --manifest bench/realcode/fresh13.toml": "clones engines from GitHub (network)",
    "python bench/realcode_score.py /tmp/fresh13 --manifest bench/realcode/fresh13.toml --markdown":
        "scores the engines the line above clones (network)",
    "python bench/realcode_score.py /tmp/fresh13 --manifest bench/realcode/fresh13.toml --plants --markdown":
        "scores the engines the line above clones (network)",
    'python bench/realcode_entries.py /tmp/fresh13 --manifest bench/realcode/fresh13.toml --note "..." > bench/realcode/fresh13/entries.md':
        "lists the entries of the engines the first line clones (network)",
    "python bench/realcode_fetch.py /tmp/fresh14 --manifest bench/realcode/fresh14.toml": "clones engines from GitHub (network)",
    "python bench/realcode_score.py /tmp/fresh14 --manifest bench/realcode/fresh14.toml --markdown":
        "scores the engines the line above clones (network)",
    "python bench/realcode_score.py /tmp/fresh14 --manifest bench/realcode/fresh14.toml --plants --markdown":
        "scores the engines the line above clones (network)",
    'python bench/realcode_entries.py /tmp/fresh14 --manifest bench/realcode/fresh14.toml --note "..." > bench/realcode/fresh14/entries.md':
        "lists the entries of the engines the first line clones (network)",
    "python bench/realcode_fetch.py /tmp/fresh15 --manifest bench/realcode/fresh15.toml": "clones engines from GitHub (network)",
    "python bench/realcode_score.py /tmp/fresh15 --manifest bench/realcode/fresh15.toml --markdown":
        "scores the engines the line above clones (network)",
    "python bench/realcode_score.py /tmp/fresh15 --manifest bench/realcode/fresh15.toml --plants --markdown":
        "scores the engines the line above clones (network)",
    'python bench/realcode_entries.py /tmp/fresh15 --manifest bench/realcode/fresh15.toml --note "..." > bench/realcode/fresh15/entries.md':
        "lists the entries of the engines the first line clones (network)",
    "python bench/realcode_fetch.py /tmp/fresh16 --manifest bench/realcode/fresh16.toml": "clones engines from GitHub (network)",
    "python bench/realcode_score.py /tmp/fresh16 --manifest bench/realcode/fresh16.toml --markdown":
        "scores the engines the line above clones (network)",
    "python bench/realcode_score.py /tmp/fresh16 --manifest bench/realcode/fresh16.toml --plants --markdown":
        "scores the engines the line above clones (network)",
    'python bench/realcode_entries.py /tmp/fresh16 --manifest bench/realcode/fresh16.toml --note "..." > bench/realcode/fresh16/entries.md':
        "lists the entries of the engines the first line clones (network)",
    "python bench/realcode_fetch.py /tmp/fresh17 --manifest bench/realcode/fresh17.toml": "clones engines from GitHub (network)",
    "python bench/realcode_score.py /tmp/fresh17 --manifest bench/realcode/fresh17.toml --markdown":
        "scores the engines the line above clones (network)",
    "python bench/realcode_score.py /tmp/fresh17 --manifest bench/realcode/fresh17.toml --plants --markdown":
        "scores the engines the line above clones (network)",
    'python bench/realcode_entries.py /tmp/fresh17 --manifest bench/realcode/fresh17.toml --note "..." > bench/realcode/fresh17/entries.md':
        "lists the entries of the engines the first line clones (network)",
    "python bench/realcode_fetch.py /tmp/fresh18 --manifest bench/realcode/fresh18.toml": "clones engines from GitHub (network)",
    "python bench/realcode_score.py /tmp/fresh18 --manifest bench/realcode/fresh18.toml --markdown":
        "scores the engines the line above clones (network)",
    "python bench/realcode_score.py /tmp/fresh18 --manifest bench/realcode/fresh18.toml --plants --markdown":
        "scores the engines the line above clones (network)",
    'python bench/realcode_entries.py /tmp/fresh18 --manifest bench/realcode/fresh18.toml --note "..." > bench/realcode/fresh18/entries.md':
        "lists the entries of the engines the first line clones (network)",
    "python bench/realcode_fetch.py /tmp/fresh19 --manifest bench/realcode/fresh19.toml": "clones engines from GitHub (network)",
    "python bench/realcode_score.py /tmp/fresh19 --manifest bench/realcode/fresh19.toml --markdown":
        "scores the engines the line above clones (network)",
    "python bench/realcode_score.py /tmp/fresh19 --manifest bench/realcode/fresh19.toml --plants --markdown":
        "scores the engines the line above clones (network)",
    'python bench/realcode_entries.py /tmp/fresh19 --manifest bench/realcode/fresh19.toml --note "..." > bench/realcode/fresh19/entries.md':
        "lists the entries of the engines the first line clones (network)",
    "python bench/realcode_fetch.py /tmp/fresh20 --manifest bench/realcode/fresh20.toml": "clones engines from GitHub (network)",
    "python bench/realcode_score.py /tmp/fresh20 --manifest bench/realcode/fresh20.toml --markdown":
        "scores the engines the line above clones (network)",
    "python bench/realcode_score.py /tmp/fresh20 --manifest bench/realcode/fresh20.toml --plants --markdown":
        "scores the engines the line above clones (network)",
    'python bench/realcode_entries.py /tmp/fresh20 --manifest bench/realcode/fresh20.toml --note "..." > bench/realcode/fresh20/entries.md':
        "lists the entries of the engines the first line clones (network)",
    "python bench/realcode_fetch.py /tmp/fresh21 --manifest bench/realcode/fresh21.toml": "clones engines from GitHub (network)",
    "python bench/realcode_score.py /tmp/fresh21 --manifest bench/realcode/fresh21.toml --markdown":
        "scores the engines the line above clones (network)",
    "python bench/realcode_score.py /tmp/fresh21 --manifest bench/realcode/fresh21.toml --plants --markdown":
        "scores the engines the line above clones (network)",
    'python bench/realcode_entries.py /tmp/fresh21 --manifest bench/realcode/fresh21.toml --note "..." > bench/realcode/fresh21/entries.md':
        "lists the entries of the engines the first line clones (network)",
    "python bench/realcode_fetch.py /tmp/fresh22 --manifest bench/realcode/fresh22.toml": "clones engines from GitHub (network)",
    "python bench/realcode_score.py /tmp/fresh22 --manifest bench/realcode/fresh22.toml --markdown":
        "scores the engines the line above clones (network)",
    "python bench/realcode_score.py /tmp/fresh22 --manifest bench/realcode/fresh22.toml --plants --markdown":
        "scores the engines the line above clones (network)",
    'python bench/realcode_entries.py /tmp/fresh22 --manifest bench/realcode/fresh22.toml --note "..." > bench/realcode/fresh22/entries.md':
        "lists the entries of the engines the first line clones (network)",
    "python bench/realcode_fetch.py /tmp/fresh23 --manifest bench/realcode/fresh23.toml": "clones engines from GitHub (network)",
    "python bench/realcode_score.py /tmp/fresh23 --manifest bench/realcode/fresh23.toml --markdown":
        "scores the engines the line above clones (network)",
    "python bench/realcode_score.py /tmp/fresh23 --manifest bench/realcode/fresh23.toml --plants --markdown":
        "scores the engines the line above clones (network)",
    'python bench/realcode_entries.py /tmp/fresh23 --manifest bench/realcode/fresh23.toml --note "..." > bench/realcode/fresh23/entries.md':
        "lists the entries of the engines the first line clones (network)",
    "python bench/realcode_fetch.py /tmp/fresh24 --manifest bench/realcode/fresh24.toml": "clones engines from GitHub (network)",
    "python bench/realcode_score.py /tmp/fresh24 --manifest bench/realcode/fresh24.toml --markdown":
        "scores the engines the line above clones (network)",
    "python bench/realcode_score.py /tmp/fresh24 --manifest bench/realcode/fresh24.toml --plants --markdown":
        "scores the engines the line above clones (network)",
    'python bench/realcode_entries.py /tmp/fresh24 --manifest bench/realcode/fresh24.toml --note "..." > bench/realcode/fresh24/entries.md':
        "lists the entries of the engines the first line clones (network)",
    "python bench/realcode_fetch.py /tmp/fresh25 --manifest bench/realcode/fresh25.toml": "clones engines from GitHub (network)",
    "python bench/realcode_score.py /tmp/fresh25 --manifest bench/realcode/fresh25.toml --markdown":
        "scores the engines the line above clones (network)",
    "python bench/realcode_score.py /tmp/fresh25 --manifest bench/realcode/fresh25.toml --plants --markdown":
        "scores the engines the line above clones (network)",
    'python bench/realcode_entries.py /tmp/fresh25 --manifest bench/realcode/fresh25.toml --note "..." > bench/realcode/fresh25/entries.md':
        "lists the entries of the engines the first line clones (network)",
    "python bench/realcode_fetch.py /tmp/fresh26 --manifest bench/realcode/fresh26.toml": "clones engines from GitHub (network)",
    "python bench/realcode_score.py /tmp/fresh26 --manifest bench/realcode/fresh26.toml --markdown":
        "scores the engines the line above clones (network)",
    "python bench/realcode_score.py /tmp/fresh26 --manifest bench/realcode/fresh26.toml --plants --markdown":
        "scores the engines the line above clones (network)",
    'python bench/realcode_entries.py /tmp/fresh26 --manifest bench/realcode/fresh26.toml --note "..." > bench/realcode/fresh26/entries.md':
        "lists the entries of the engines the first line clones (network)",
}
#: What a line must also print (stdout and stderr together).
SAYS = {
    "graphlint check dsv4/": "Found 31 findings",
    "graphlint check src/ --entry src/engine.py:Decoder.step": "src/engine.py:6:16: GL101 [host-sync-item]",
    "graphlint check --statistics": "host-sync",
    "graphlint capture-test --target my_engine/target.py:make_target": "capture-test passed (tracer only",
    "graphlint inventory --target my_engine/target.py:make_target -o inventory.md": "wrote inventory.md",
    "graphlint inventory --target graphlint.targets.hf:make_target --option model=path/to/config.json --option "
    "cache=dynamic": "GL394",
    "graphlint record -o decode-path.json -- python bench/my_decode_bench.py": "1 decode loops) in",
    "graphlint check --decode-path decode-path.json": "1 per-token loop (timed_generate)",  # the recorded loop
    "graphlint record -- -m mypkg.serve --smoke-test": "1 decode loops) in",
    "graphlint inventory --decoder full-graph --record decode-path.json": "wrote the decode path of",
}
