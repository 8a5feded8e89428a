"""The dynamic half: run a real engine under probes and report what the GPU decides.

Everything here imports torch lazily or at module level; nothing in ``graphlint.static``
or ``graphlint.report`` may import from this package at import time.
"""
