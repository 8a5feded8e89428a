"""graphlint: find everything that stops a PyTorch decode step from being captured as a CUDA graph.

The package is split the way data flows: ``rules`` (YAML data) -> ``static`` / ``dynamic``
analyzers -> :class:`graphlint.finding.Finding` -> ``report`` renderers -> ``cli``.
Importing ``graphlint`` (or anything under ``graphlint.static``/``graphlint.report``) must
never import torch: the static half runs in pre-commit hooks on machines without it.
"""

__version__ = "0.1.0"

#: The name to ``pip install`` (pyproject's ``[project] name``): "graphlint" on the package index
#: is an unrelated project. Messages that tell a user what to install use this.
DISTRIBUTION = "cuda-graphlint"
