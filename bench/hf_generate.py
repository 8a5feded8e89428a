"""A plain Hugging Face decode loop: the command ``graphlint record`` is measured and benchmarked on.

    python bench/hf_generate.py [--model tiny-llama|llama|qwen2|qwen3|mistral|gemma] [--steps 64]
                                [--loop generate|manual] [--device cpu|cuda]

``--loop generate`` calls ``model.generate`` (transformers' own loop: greedy, a dynamic cache);
``manual`` is the loop a user writes: one forward per token, the cache and the argmax fed back.
The models are tiny configs with random weights (graphlint.targets.hf builds them: nothing is
downloaded). Prints the tokens and one JSON line with the decode seconds per token.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from graphlint.targets.hf import PRESETS, load_model  # noqa: E402

TINY = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "vocab_size": 512, "max_position_embeddings": 1024, "tie_word_embeddings": False}
#: tiny configs of a few architectures (model_type and what it needs beyond TINY)
ARCHITECTURES = {
    "llama": {"model_type": "llama"},
    "qwen2": {"model_type": "qwen2"},
    "qwen3": {"model_type": "qwen3", "head_dim": 16},
    "mistral": {"model_type": "mistral", "sliding_window": None},
    "gemma": {"model_type": "gemma", "head_dim": 16},
}


def build(name: str, device: str):
    if name in PRESETS:
        lm, _ = load_model(name, dtype="float32", attn="sdpa", seed=0)
    else:
        import tempfile

        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
            json.dump({**TINY, **ARCHITECTURES[name]}, fh)
        lm, _ = load_model(fh.name, dtype="float32", attn="sdpa", seed=0)
        Path(fh.name).unlink()
    return lm.to(device).eval()


@torch.no_grad()
def manual_loop(model, prompt: torch.Tensor, steps: int) -> list[int]:
    from transformers import DynamicCache

    cache = DynamicCache(config=model.config)
    out = model(input_ids=prompt, past_key_values=cache, use_cache=True)
    token = out.logits[:, -1:].argmax(-1)
    tokens = [int(token)]
    for _ in range(steps - 1):
        out = model(input_ids=token, past_key_values=out.past_key_values, use_cache=True)
        token = out.logits[:, -1:].argmax(-1)
        tokens.append(int(token))
    return tokens


@torch.no_grad()
def generate_loop(model, prompt: torch.Tensor, steps: int) -> list[int]:
    ids = model.generate(prompt, max_new_tokens=steps, min_new_tokens=steps, do_sample=False,
                         pad_token_id=0, attention_mask=torch.ones_like(prompt))
    return ids[0, prompt.shape[1]:].tolist()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="tiny-llama", choices=[*PRESETS, *ARCHITECTURES])
    parser.add_argument("--steps", type=int, default=64)
    parser.add_argument("--loop", choices=("generate", "manual"), default="generate")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    model = build(args.model, args.device)
    prompt = torch.tensor([[1, 17, 42, 7]], device=args.device)
    run = generate_loop if args.loop == "generate" else manual_loop
    run(model, prompt, 4)  # warm-up
    start = time.perf_counter()
    tokens = run(model, prompt, args.steps)
    seconds = time.perf_counter() - start
    print(" ".join(map(str, tokens)))
    print(json.dumps({"model": args.model, "loop": args.loop, "steps": args.steps,
                      "s_per_token": seconds / max(args.steps, 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
