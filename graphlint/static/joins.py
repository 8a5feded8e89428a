"""The torch joins of a sequence of tensors, named once for every rule that reads them.

A join along an existing dimension (``torch.cat`` and its aliases, ``hstack`` / ``vstack``) makes
a tensor as long as its parts together: joined onto itself every step it grows (GL207). ``stack``
adds a dimension instead. Both need every part on one device, so a host part puts the result on the
host (:mod:`.hostconcat`), and both copy their parts into a fresh allocation (:mod:`.loadedfields`).
"""

from __future__ import annotations

#: joins along an existing dimension: the result is its parts end to end
CONCATS = frozenset(f"torch.{n}" for n in ("cat", "concat", "concatenate", "hstack", "vstack",
                                            "column_stack", "row_stack"))
#: every join of a sequence of tensors: the concatenations and ``torch.stack``
JOINS = CONCATS | {"torch.stack"}
#: the last part of a concatenation's name, for code read without its imports (``cat``, ``torch.cat``)
CONCAT_TAILS = frozenset(name.rsplit(".", 1)[1] for name in CONCATS)
