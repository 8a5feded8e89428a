"""A target for Hugging Face causal LMs: one decode step of ``AutoModelForCausalLM``.

    graphlint inventory --target graphlint.targets.hf:make_target --option model=tiny-llama
    graphlint inventory --target graphlint.targets.hf:make_target --option model=path/to/config.json \
        --option cache=dynamic
    graphlint inventory --target graphlint.targets.hf:make_target --option arch=mixtral --option batch=4

``model`` is a directory saved with ``save_pretrained`` (its weights are loaded; a directory
holding only ``config.json`` gets random weights), a JSON config file (random weights, any
size), or the built-in preset ``tiny-llama``. ``arch`` is any model type of the installed
transformers (``mixtral``, ``gemma2``, ``deepseek_v3``): its config class's defaults shrunk to a
few layers and a small width by :mod:`graphlint.targets.hf_config`, random weights. Nothing is
ever downloaded: the GPU machines this runs on often have no network, and an inventory must not
depend on one.

Decisions:

* **Decode from an empty cache, teacher-forced.** Step ``s`` feeds row ``b`` of the batch token
  ``(7919 s + 13 + 104729 b) % vocab`` (the next one up when that is a multimodal placeholder id,
  an image or audio token) at position ``s % max_len``; at position 0 the cache restarts (a
  static cache is zeroed in place, a dynamic one is replaced), so a soak of any length runs and
  two instances built alike see identical inputs. No prompt: a prefill is not a decode step.
* **One region per decode step** (``decode``): the model's whole forward, as ``generate`` with a
  compiled decode step would capture it. Token and position live in static device buffers
  filled by ``stage`` (host side, never captured).
* **cache=static** (default) is transformers' ``StaticCache`` with ``max_cache_len=max_len``:
  fixed-size buffers updated in place, its write position a device tensor, so the step can be
  captured. It is built from the config's ``layer_types``, so it is whatever the architecture
  needs: sliding-window layers (a ring of ``sliding_window`` slots), full layers, linear-attention
  and conv states of hybrid models. **cache=dynamic** is ``DynamicCache``, which concatenates a
  new key/value per step: the tracer reports what that does, and on a GPU capture or replay
  fails. **cache=model** passes no cache at step 0 and then the one the model returned (MiniMax
  refuses any cache but its own). **cache=auto** (the default with ``arch``) is the first of
  static, dynamic and model whose cache builds and runs one throwaway step; the target's
  ``cache_note`` says which and why.
* Random weights come from ``torch.manual_seed(seed)``, so the replay probe's two instances are
  identical. ``dtype`` defaults to float32 so graph and eager agree to rounding.
* One device: the model goes on ``devices[0]``; more than one (``--placement span``) is refused
  because transformers spreads layers only through accelerate's hooks.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

from graphlint.dynamic.target import Region, TargetError
from graphlint.paths import display_path

#: A Llama small enough for a CPU test (~0.2 M parameters), with grouped-query attention.
PRESETS: dict[str, dict[str, Any]] = {
    "tiny-llama": {
        "model_type": "llama", "vocab_size": 512, "hidden_size": 64, "intermediate_size": 128,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "max_position_embeddings": 1024, "rms_norm_eps": 1e-5, "tie_word_embeddings": False,
    },
}
CACHES = ("static", "dynamic", "model", "auto")
MAX_LEN = 256  # the default cache length in tokens
DTYPES = ("float32", "bfloat16", "float16")
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                "pytorch_model.bin.index.json")


def teacher_token(step: int, vocab_size: int, row: int = 0, reserved: frozenset[int] = frozenset()) -> int:
    token = (7919 * step + 13 + 104729 * row) % vocab_size
    while token in reserved and len(reserved) < vocab_size:
        token = (token + 1) % vocab_size
    return token


def _transformers():
    try:
        import transformers
    except ImportError as exc:
        raise TargetError("graphlint.targets.hf needs transformers: pip install 'cuda-graphlint[hf]' "
                          f"({type(exc).__name__}: {exc})") from None
    return transformers


def load_model(model: str, *, dtype: str, attn: str, seed: int, arch: str = ""):
    """(model, how it was made) from an architecture name, a preset, a JSON config file or a saved directory."""
    import torch

    tf = _transformers()
    torch_dtype = getattr(torch, dtype)
    if arch:
        from graphlint.targets.hf_config import describe

        config = _tiny(arch)
        source = f"{arch}: its config's defaults shrunk ({describe(config)}), random weights"
    elif model in PRESETS:
        config, source = tf.AutoConfig.for_model(**PRESETS[model]), f"preset {model}, random weights"
    else:
        path = Path(model)
        if path.is_dir() and any((path / name).is_file() for name in WEIGHT_FILES):
            lm = tf.AutoModelForCausalLM.from_pretrained(path, dtype=torch_dtype, local_files_only=True,
                                                         trust_remote_code=False,
                                                         **({"attn_implementation": attn} if attn else {}))
            return lm, f"{path} (weights loaded)"
        config_file = path / "config.json" if path.is_dir() else path
        if not config_file.is_file():
            raise TargetError(f"model={model!r}: not a preset ({', '.join(PRESETS)}), a JSON config file or a "
                              "directory with config.json (graphlint never downloads models)")
        try:
            raw = json.loads(config_file.read_text(encoding="utf-8"))
            config = tf.AutoConfig.for_model(**raw)
        except (ValueError, KeyError, TypeError) as exc:
            raise TargetError(f"model={model!r}: {config_file} is not a usable transformers config: "
                              f"{type(exc).__name__}: {exc}") from None
        source = f"{config_file}, random weights"
    torch.manual_seed(seed)  # the replay probe builds two instances: same weights for both
    from graphlint.targets.hf_config import causal_lm_class

    cls = causal_lm_class(arch) if arch else None
    kwargs = {"attn_implementation": attn} if attn else {}  # '': transformers' choice (sdpa where supported)
    if cls is not None:  # the architecture's own causal-LM class, also where the Auto mapping keys another config
        lm = cls._from_config(config, **kwargs)
    else:
        lm = tf.AutoModelForCausalLM.from_config(config, **kwargs)
    return lm.to(torch_dtype), source


def _tiny(arch: str):
    from graphlint.targets.hf_config import causal_lm_architectures, tiny_config

    known = causal_lm_architectures()
    if arch not in known:
        import difflib

        close = difflib.get_close_matches(arch, known, n=3)
        raise TargetError(f"arch={arch!r}: not a causal-LM architecture of transformers "
                          f"{_transformers().__version__}" + (f" (did you mean {', '.join(close)}?)" if close else
                                                                "; `graphlint zoo --list` lists them"))
    return tiny_config(arch)


class CausalLMTarget:
    """The target protocol around a causal LM and its cache (see the module docstring)."""

    def __init__(self, lm, device, cache: str, max_len: int, source: str, batch: int = 1) -> None:
        import inspect

        import torch

        from graphlint.targets.hf_config import reserved_ids

        self.lm, self.kind, self.max_len, self.source, self.batch = lm, cache, max_len, source, batch
        self.devices = [device]
        self.vocab = lm.config.get_text_config(decoder=True).vocab_size
        self.reserved = frozenset(i for i in reserved_ids(lm.config) if 0 <= i < self.vocab)
        self.input_ids = torch.zeros((batch, 1), dtype=torch.long, device=device)
        self.position_ids = torch.zeros((batch, 1), dtype=torch.long, device=device)
        # transformers renamed forward's ``past_key_values`` to ``cache`` (5.2x); take either
        params = inspect.signature(lm.forward).parameters
        self._cache_arg = "cache" if "cache" in params else "past_key_values"
        self.cache_note = ""
        if cache == "auto":
            self.kind, self.cache_note = self._working_cache()
        self.cache = self._new_cache()
        self._logits = None

    def _new_cache(self):
        tf = _transformers()
        if self.kind == "static":
            return tf.StaticCache(config=self.lm.config, max_cache_len=self.max_len)
        if self.kind == "dynamic":
            return tf.DynamicCache(config=self.lm.config)
        return None  # "model": the model makes its own at step 0

    def _working_cache(self) -> tuple[str, str]:
        """The first cache kind that builds and runs one throwaway step (``cache=auto``)."""
        import torch

        refused = []
        for kind in ("static", "dynamic", "model"):
            self.kind = kind
            try:
                cache = self._new_cache()
                with torch.no_grad():  # two steps: a cache can accept the first token and fail at the second
                    for step in (0, 1):
                        self.position_ids.fill_(step)
                        out = self._forward(cache, torch.full_like(self.input_ids, teacher_token(step, self.vocab)))
                        cache = out.past_key_values if kind == "model" else cache
            except Exception as exc:  # noqa: BLE001 - the next kind is tried; the note says why
                self.position_ids.zero_()
                refused.append(f"{kind}: {type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}")
                continue
            self.position_ids.zero_()
            return kind, "; ".join(refused)
        raise TargetError("no cache works with this model: " + "; ".join(refused))

    @property
    def cache_layout(self) -> str:
        """``StaticCache: StaticLayer x1, StaticSlidingWindowLayer x5``: what the step writes into."""
        layers = getattr(self.cache, "layers", None)
        if self.cache is None or layers is None:
            return type(self.cache).__name__ if self.cache is not None else "the model's own cache"
        from collections import Counter

        counts = Counter(type(layer).__name__ for layer in layers)
        return f"{type(self.cache).__name__}: " + ", ".join(f"{name} x{n}" for name, n in counts.items())

    def stage(self, step: int) -> None:
        position = step % self.max_len
        if position == 0 and step:  # the context is full: start again from an empty cache
            if self.kind == "static":
                self.cache.reset()  # in place: the buffers a captured graph reads stay where they are
            else:
                self.cache = self._new_cache()
        for row in range(self.batch):
            self.input_ids[row].fill_(teacher_token(step, self.vocab, row, self.reserved))
        self.position_ids.fill_(position)

    def _forward(self, cache, input_ids):
        return self.lm(input_ids=input_ids, position_ids=self.position_ids, use_cache=True,
                       **{self._cache_arg: cache})

    def _decode(self) -> None:
        out = self._forward(self.cache, self.input_ids)
        if self.kind == "model":
            self.cache = getattr(out, "past_key_values", None) or getattr(out, "cache", None)
        self._logits = out.logits

    def regions(self) -> list[Region]:
        import torch

        return [Region("decode", torch.no_grad()(self._decode), device=self.devices[0], source=self._forward_source,
                       extra={"entry": self._forward_entry, "model": self.source, "cache": self.kind})]

    @property
    def _forward_entry(self) -> str:
        """``file.py:LlamaForCausalLM.forward``: the static cross-check starts where the step does
        (the model's forward, in transformers), not in this wrapper."""
        code = self._forward_code()
        return f"{display_path(code.co_filename)}:{code.co_qualname}" if code else ""

    @property
    def _forward_source(self) -> str:
        code = self._forward_code()
        return f"{display_path(code.co_filename)}:{code.co_firstlineno}" if code else ""

    def _forward_code(self):
        import inspect

        forward = inspect.unwrap(type(self.lm).forward)  # under transformers' output/docstring decorators
        return getattr(forward, "__code__", None)

    def output(self):
        return self._logits


def make_target(devices: Sequence[Any], *, model: str = "tiny-llama", arch: str = "", cache: str = "",
                max_len: int | None = None, batch: int = 1, dtype: str = "float32", attn: str = "",
                seed: int = 0) -> CausalLMTarget:
    """Bad options raise :class:`TargetError` (exit 2 from the CLI), before any model is built.
    ``cache`` defaults to ``auto`` with ``arch`` and to ``static`` otherwise; ``max_len`` to
    :data:`MAX_LEN`, or the model's ``max_position_embeddings`` when that is smaller (a given
    ``max_len`` past it is refused)."""
    import torch

    cache = cache or ("auto" if arch else "static")
    if cache not in CACHES:
        raise TargetError(f"cache={cache!r}: expected one of {', '.join(CACHES)}")
    if dtype not in DTYPES:
        raise TargetError(f"dtype={dtype!r}: expected one of {', '.join(DTYPES)}")
    if max_len is not None and (not isinstance(max_len, int) or max_len < 2):
        raise TargetError(f"max_len={max_len!r}: expected an integer >= 2 (the cache length in tokens)")
    if not isinstance(batch, int) or batch < 1:
        raise TargetError(f"batch={batch!r}: expected an integer >= 1 (sequences decoded together)")
    if len(devices) != 1:
        raise TargetError(f"graphlint.targets.hf runs a model on one device, got {len(devices)}: "
                          "use --placement per-gpu (the default)")
    device = torch.device(devices[0])
    lm, source = load_model(str(model), dtype=dtype, attn=attn, seed=seed, arch=str(arch or ""))
    limit = getattr(lm.config.get_text_config(decoder=True), "max_position_embeddings", None)
    if max_len is None:
        max_len = min(MAX_LEN, limit) if isinstance(limit, int) and limit >= 2 else MAX_LEN
    if isinstance(limit, int) and 0 < limit < max_len:  # -1 (XLNet): no limit
        raise TargetError(f"max_len={max_len} is more than the model's max_position_embeddings ({limit})")
    lm = lm.to(device).eval().requires_grad_(False)
    return CausalLMTarget(lm, device, cache, max_len, source, batch)
