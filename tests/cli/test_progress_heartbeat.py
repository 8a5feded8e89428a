"""The check's bar keeps its clock moving between callbacks (a 25,000-line file held it still for
40-50 s in the whole-torch check), and forking the workers while it draws stays safe."""

from __future__ import annotations

import io
import subprocess
import sys
import time

from rich.console import Console

from graphlint import progress as progress_module
from graphlint.progress import CheckProgress


def test_the_bar_redraws_without_news_and_lets_go_of_its_lock():
    out = io.StringIO()
    bar = CheckProgress(Console(file=out, force_terminal=True, width=120, color_system=None))
    bar.update(1, 171, "cross-file pass")
    assert bar._lock is not None and bar._lock in progress_module._DRAWING
    drawn = len(out.getvalue())
    time.sleep(1.2)  # no update: only the refresh thread can draw now
    assert len(out.getvalue()) > drawn
    bar.close()
    assert bar._lock not in progress_module._DRAWING


FORKS_WHILE_DRAWING = """
import io, os, sys, time
from rich.console import Console
from graphlint.progress import CheckProgress

bar = CheckProgress(Console(file=io.StringIO(), force_terminal=True, width=120, color_system=None))
for i in range(40):  # fork while the refresh thread draws (4 a second): every child must finish
    bar.update(i, 40, "analysing")
    pid = os.fork()
    if pid == 0:
        sys.stderr.write("child writes\\n")
        sys.stderr.flush()
        os._exit(0)
    os.waitpid(pid, 0)
    time.sleep(0.02)
bar.close()
print("ok")
"""


def test_forking_while_the_bar_draws_never_deadlocks_a_child():
    result = subprocess.run([sys.executable, "-c", FORKS_WHILE_DRAWING], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr
