"""A DeepSeek-V4-style decode engine in miniature, with eager, A/B-split graph and full-graph decoders.

The eager decoder is the "before" picture graphlint is meant to find problems in; the two graph
decoders are the fixes the seed engine made (A/B split) and the one it never reached (full graph).
"""

from dsv4.config import PRESETS, DSV4Config, get_config

__all__ = ["PRESETS", "DSV4Config", "get_config"]
