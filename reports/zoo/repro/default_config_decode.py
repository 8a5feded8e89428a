"""Reproducer: four causal LMs of transformers 5.17 do not build, or do not decode one token with a
cache, from their own config defaults ("target not built" in graphlint's zoo, issue 21, on the
H200 and on the CPU alike). Each case shrinks only the sizes (layers, widths, vocabulary) and leaves
the default that breaks it untouched; ``--fixed`` states the value (dbrx: two), and the model decodes.

Why, per case (lines of 5.17.0):

- ``dbrx``: ``DbrxAttention.__init__`` reads ``attn_config.rope_theta``
  (``models/dbrx/modeling_dbrx.py:195``), a field ``DbrxAttentionConfig`` does not have (the
  rotary base lives in ``DbrxConfig.rope_parameters``): *AttributeError: 'DbrxAttentionConfig'
  object has no attribute 'rope_theta'*. Only a checkpoint whose ``attn_config`` carries a stray
  ``rope_theta`` builds. Past it, the default ``clip_qkv=None`` fails the first step:
  ``qkv_states.clamp(min=None, max=None)`` (``modeling_dbrx.py:216``) raises *torch.clamp: At least
  one of 'min' or 'max' must not be None* (DBRX's release sets ``clip_qkv=8``). Two values, then.
- ``cohere_compass_text``: the config's default ``rope_parameters`` is ``{}`` and
  ``CohereCompassRotaryEmbedding.__init__`` indexes it by layer type
  (``models/cohere_compass/modeling_cohere_compass.py:81``): *KeyError: 'full_attention'*.
- ``blt``: ``BltModel.forward`` makes its cache with ``DynamicCache(config=self.config)``, which asks
  a ``BltConfig`` for ``num_hidden_layers`` (only its sub-configs have one): *AttributeError:
  'BltConfig' object has no attribute 'num_hidden_layers'*, for any cache, given or not.
- ``bamba`` and ``granitemoehybrid``: the defaults make every layer Mamba (``attn_layer_indices=None``,
  ``layer_types=None``); the forward still builds a full-attention mask, which asks the cache for
  its length (``masking_utils.py:830``, ``get_query_offset``): *ValueError: `get_seq_length` can only
  be called on Attention layers*. The released models have attention layers; graphlint's tiny
  configs now give such a hybrid one (``graphlint.targets.hf_config.with_attention_layer``).

    python reports/zoo/repro/default_config_decode.py            # CPU: each case, its error
    python reports/zoo/repro/default_config_decode.py --fixed    # the missing values stated: each decodes
    python reports/zoo/repro/default_config_decode.py --cuda     # the same on a GPU in bfloat16 (the zoo's run)

Nothing here needs CUDA to fail. Plain torch + transformers; nothing of graphlint. Written for
graphlint's zoo (issue 21).
"""

import argparse
import traceback

import torch
import transformers

SMALL = dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, max_position_embeddings=256)
MAMBA = dict(SMALL, mamba_n_heads=8, mamba_d_head=16, mamba_d_state=16, mamba_n_groups=1, mamba_chunk_size=16)
BLT_PART = dict(hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=4,
                max_position_embeddings=256)
CASES = {  # name: (config class, model class, sizes only, the values --fixed states)
    "dbrx": ("DbrxConfig", "DbrxForCausalLM",
             dict(d_model=64, n_heads=4, n_layers=2, max_seq_len=256, vocab_size=256, attn_config={"kv_n_heads": 2},
                  ffn_config={"ffn_hidden_size": 128, "moe_num_experts": 4, "moe_top_k": 2}),
             {"attn_config": {"kv_n_heads": 2, "rope_theta": 10000.0, "clip_qkv": 8.0}}),
    "cohere_compass_text": ("CohereCompassTextConfig", "CohereCompassForCausalLM", dict(SMALL),
                            {"rope_parameters": {"full_attention": {"rope_type": "default", "rope_theta": 10000.0,
                                                                     "mrope_section": [3, 3, 2]}}}),  # head_dim 16
    "blt": ("BltConfig", "BltForCausalLM",
            dict(vocab_size=260, patching_mode="byte", patch_size=1, cross_attn_k=2,
                 encoder_config=dict(BLT_PART, num_hidden_layers=1, hidden_size_global=128),
                 decoder_config=dict(BLT_PART, num_hidden_layers=2, hidden_size_global=128),
                 global_config=dict(BLT_PART, hidden_size=128, num_hidden_layers=2),
                 patcher_config=dict(BLT_PART, num_hidden_layers=2), encoder_hash_byte_group_vocab=512),
            {"num_hidden_layers": 2}),
    "bamba": ("BambaConfig", "BambaForCausalLM", dict(MAMBA), {"attn_layer_indices": [1]}),
    "granitemoehybrid": ("GraniteMoeHybridConfig", "GraniteMoeHybridForCausalLM", dict(MAMBA),
                         {"layer_types": ["mamba", "attention"]}),
}


def decode(name, device, dtype, fixed):
    config_name, model_name, sizes, fix = CASES[name]
    config = getattr(transformers, config_name)(**{**sizes, **(fix if fixed else {})})
    if fixed and name == "blt":
        config.num_hidden_layers = fix["num_hidden_layers"]  # not a BltConfig field: set as an attribute
    torch.manual_seed(0)
    model = getattr(transformers, model_name)(config).to(device, dtype).eval()
    cache = transformers.DynamicCache(config=model.config) if name != "blt" else None
    with torch.no_grad():
        for position in range(2):
            tokens = torch.full((1, 1), 7 + position, device=device)
            out = model(input_ids=tokens, position_ids=torch.full((1, 1), position, device=device),
                        past_key_values=cache, use_cache=True)
            cache = out.past_key_values
    return tuple(out.logits.shape)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cuda", action="store_true", help="run on cuda:0 in bfloat16, as the zoo did on the H200")
    parser.add_argument("--fixed", action="store_true", help="state the values each default leaves out")
    parser.add_argument("--case", choices=sorted(CASES), action="append", help="only these (repeatable)")
    args = parser.parse_args()
    device, dtype = (torch.device("cuda:0"), torch.bfloat16) if args.cuda else (torch.device("cpu"), torch.float32)
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, {device}, {dtype}")
    failed = 0
    for name in args.case or sorted(CASES):
        try:
            print(f"{name}: decodes two tokens, logits {decode(name, device, dtype, args.fixed)}")
        except Exception as exc:  # noqa: BLE001 - each case reports where it broke
            failed += 1
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            at = frame.filename.split("site-packages/")[-1]
            print(f"{name}: {type(exc).__name__}: {str(exc).splitlines()[0][:150]} (at {at}:{frame.lineno})")
    print(f"{failed} of {len(args.case or CASES)} do not decode" + ("" if args.fixed else "; --fixed states the value"))


if __name__ == "__main__":
    main()
