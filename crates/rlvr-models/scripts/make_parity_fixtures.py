"""Build the parity fixtures of rlvr-models with the reference implementation (`transformers`).

Writes, under `crates/rlvr-models/tests/fixtures/`:
  tiny-qwen2/   a random Qwen2ForCausalLM (q/k/v bias, untied lm_head), HF layout
  tiny-llama/   a random LlamaForCausalLM (no bias, tied embeddings, rope_theta 5e5), HF layout
  each with `parity.json`: token sequences and the logits transformers computes for them (f32, eval mode);
  tokenizer/    a tiny byte-level BPE `tokenizer.json`, a `tokenizer_config.json` with a ChatML
                chat template, and `expected.json` with what transformers renders / encodes.

Run from the repository root:  /work/venv/bin/python crates/rlvr-models/scripts/make_parity_fixtures.py
Versions used for the committed fixtures are recorded in each parity.json ("versions").
"""

import json
import os

import torch
import transformers
from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "fixtures")

VOCAB = 256
COMMON = dict(
    vocab_size=VOCAB,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=128,
    rms_norm_eps=1e-6,
    bos_token_id=1,
    eos_token_id=2,
)


def randomize(model: torch.nn.Module, seed: int) -> None:
    """Non-trivial values everywhere: std 0.1 weights, random biases, norm gains near 1."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=gen)
            if "norm" in name:
                p.copy_(1.0 + 0.1 * noise)
            elif name.endswith("bias"):
                p.copy_(0.1 * noise)
            else:
                p.copy_(0.1 * noise)


def sequences(seed: int):
    gen = torch.Generator().manual_seed(seed)
    return [torch.randint(0, VOCAB, (n,), generator=gen).tolist() for n in (5, 12, 23)]


def build(name, cls, config, seed):
    torch.manual_seed(seed)
    model = cls(config).eval()
    randomize(model, seed)
    if config.tie_word_embeddings:
        assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    out_dir = os.path.join(OUT, name)
    model.save_pretrained(out_dir, safe_serialization=True)
    cases = []
    with torch.no_grad():
        for ids in sequences(seed + 1):
            logits = model(torch.tensor([ids])).logits[0].float()
            cases.append(
                {"input_ids": ids, "logits": [[round(float(v), 6) for v in row] for row in logits]}
            )
    record = {
        "model": name,
        "architecture": cls.__name__,
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__},
        "cases": cases,
    }
    with open(os.path.join(out_dir, "parity.json"), "w") as f:
        json.dump(record, f, separators=(",", ":"))
    print(name, "params", sum(p.numel() for p in model.parameters()))


def tokenizer_fixture():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    text = [
        "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May.",
        "How many clips did Natalia sell altogether in April and May?",
        "The answer is 72. Let's think step by step.",
        "def add(a, b):\n    return a + b\n",
        "Les élèves ont résolu 12 problèmes. 数学 is math.",
    ] * 20
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(text, trainer)
    template = (
        "{%- for message in messages %}"
        "{%- if loop.first and message['role'] != 'system' %}"
        "{{- '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}"
        "{%- endif %}"
        "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'].strip() + '<|im_end|>' + '\\n' }}"
        "{%- endfor %}"
        "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
    )
    fast.chat_template = template
    out_dir = os.path.join(OUT, "tokenizer")
    fast.save_pretrained(out_dir)
    # Keep the template inside tokenizer_config.json (the older, still most common layout).
    cfg_path = os.path.join(out_dir, "tokenizer_config.json")
    with open(cfg_path) as f:
        cfg = json.load(f)
    cfg["chat_template"] = template
    with open(cfg_path, "w") as f:
        json.dump(cfg, f, indent=2)
    jinja = os.path.join(out_dir, "chat_template.jinja")
    if os.path.exists(jinja):
        os.remove(jinja)
    messages = [
        {"role": "user", "content": "  How many clips did Natalia sell?  "},
        {"role": "assistant", "content": "72"},
        {"role": "user", "content": "And in May?"},
    ]
    rendered = fast.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    rendered_no_prompt = fast.apply_chat_template(messages[:2], tokenize=False, add_generation_prompt=False)
    samples = ["Natalia sold 48 clips.", "def add(a, b):\n\treturn a+b", "élèves 数学 ok", rendered]
    expected = {
        "messages": messages,
        "rendered_with_generation_prompt": rendered,
        "rendered_first_two_no_prompt": rendered_no_prompt,
        "encode": [{"text": s, "ids": fast.encode(s, add_special_tokens=False)} for s in samples],
        "eos_token_id": fast.convert_tokens_to_ids("<|im_end|>"),
        "pad_token_id": fast.convert_tokens_to_ids("<|endoftext|>"),
    }
    with open(os.path.join(out_dir, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1, ensure_ascii=False)


if __name__ == "__main__":
    build("tiny-qwen2", Qwen2ForCausalLM, Qwen2Config(**COMMON, tie_word_embeddings=False), seed=10)
    build(
        "tiny-llama",
        LlamaForCausalLM,
        LlamaConfig(**COMMON, tie_word_embeddings=True, rope_theta=500000.0, attention_bias=False),
        seed=20,
    )
    tokenizer_fixture()
