"""The parameters a ``torch.nn`` layer owns, for classes and fields the project builds from it.

A subclass of ``nn.Linear`` reads ``self.weight`` and ``self.bias`` without ever assigning them, and
``self.embed = nn.Embedding(...)`` makes ``self.embed.weight`` a parameter of the module: both are
weights, constant from one step to the next, so ``self.weight.to(x.dtype)`` in ``forward`` converts
the whole matrix again every call (GL206; an fp32 model decoding in fp16 pays it on every layer, every
token). The library's own layers are not in the analysed files, so what they own is this table:
the common layers' parameters and buffers, by class name under ``torch.nn``.
"""

from __future__ import annotations

_WB = ("weight", "bias")
#: ``torch.nn.<name>`` -> the tensors it owns as attributes (parameters and buffers)
LAYER_TENSORS: dict[str, tuple[str, ...]] = {
    **{name: _WB for name in ("Linear", "Bilinear", "LazyLinear", "LayerNorm", "GroupNorm", "RMSNorm",
                              "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d")},
    **{name: ("weight",) for name in ("Embedding", "EmbeddingBag", "PReLU")},
    **{name: (*_WB, "running_mean", "running_var") for name in ("BatchNorm1d", "BatchNorm2d", "BatchNorm3d")},
}


def layer_tensors(dotted: str | None) -> tuple[str, ...]:
    """``torch.nn.Linear`` (or ``torch.nn.modules.linear.Linear``) -> ("weight", "bias"); else ()."""
    if not dotted or not dotted.startswith("torch.nn."):
        return ()
    return LAYER_TENSORS.get(dotted.rsplit(".", 1)[-1], ())
