"""Build a random-weight Qwen3-ASR model folder offline, for tests and benchmarks.

No test may need the Hugging Face hub, so the project makes its own models: the
exact Qwen3-ASR architecture of transformers (the ``-hf`` layout) with random
weights, a small byte-level BPE tokenizer that keeps the real special tokens and
the ``language X<asr_text>`` output format, and the 128-bin feature extractor.

Two shapes are offered:

- ``tiny``: a few hundred thousand parameters, for the test suite. Its audio
  encoder windows are 2 s (``n_window_infer=200``) so that window boundaries are
  crossed by short test utterances.
- ``0.6b``: the layer counts and widths of Qwen/Qwen3-ASR-0.6B (random weights,
  a small tokenizer, the real vocabulary size), for benchmarks whose compute
  must match the real model.

With ``--script TEXT`` the decoder is rewired so that greedy decoding writes
``language English<asr_text>TEXT`` whatever the audio: a model whose every
hypothesis agrees, for tests of when committed words are streamed.

Usage: ``python -m tools.random_model OUT_DIR [--shape tiny|0.6b] [--script TEXT]``
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wyoming_qwen3.model.format import ASR_TEXT_TAG

#: Special tokens of the real checkpoints; their ids differ here (read them from
#: the tokenizer, never hard-code them).
SPECIAL_TOKENS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|audio_start|>",
    "<|audio_end|>",
    "<|audio_pad|>",
]

#: Renders the same prompt as the real checkpoint's template:
#: <|im_start|>system\n{context}<|im_end|>\n<|im_start|>user\n
#: <|audio_start|><|audio_pad|><|audio_end|><|im_end|>\n<|im_start|>assistant\n
CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{{ '<|im_start|>' + message['role'] + '\\n' }}"
    "{%- if message['content'] is string -%}{{ message['content'] }}"
    "{%- else -%}{%- for part in message['content'] -%}"
    "{%- if part['type'] == 'audio' -%}{{ '<|audio_start|><|audio_pad|><|audio_end|>' }}"
    "{%- elif part['type'] == 'text' -%}{{ part['text'] }}{%- endif -%}"
    "{%- endfor -%}{%- endif -%}"
    "{{ '<|im_end|>\\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\\n' }}{%- endif -%}"
)

#: Text the tokenizer's merges are learned from: the shape of what Home Assistant
#: users say, plus the language names of the output prefix.
_TOKENIZER_CORPUS = """
turn on the kitchen lights turn off the living room lamp set the bedroom
temperature to twenty one degrees what is the weather today open the garage door
close the blinds in the office start the vacuum set a timer for five minutes
play music in the hall dim the lights to fifty percent lock the front door
what time is it is the back door open switch off the fan in the bathroom
language English German French Spanish Italian Dutch Chinese Japanese Korean
one two three four five six seven eight nine ten eleven twelve
"""


@dataclass(frozen=True)
class ModelShape:
    """Widths and depths of one random model."""

    audio_layers: int
    audio_heads: int
    audio_d_model: int
    audio_ffn: int
    audio_downsample: int
    n_window: int
    n_window_infer: int
    text_layers: int
    text_hidden: int
    text_intermediate: int
    text_heads: int
    text_kv_heads: int
    head_dim: int
    vocab_size: int
    #: Rows of the embedding and the output projection, when not the tokenizer's size: the real
    #: checkpoint's vocabulary, so that decoding reads and computes what the real model's does.
    model_vocab_size: int | None = None
    #: The output projection is the embedding (Qwen3-0.6B's and the real checkpoints' way); the
    #: scripted decoder needs them apart.
    tied_embeddings: bool = False


SHAPES: dict[str, ModelShape] = {
    "tiny": ModelShape(
        audio_layers=2,
        audio_heads=2,
        audio_d_model=32,
        audio_ffn=64,
        audio_downsample=8,
        # n_window=50 matches the processor, whose token count assumes 100-frame
        # (1 s) convolution chunks; 200-frame attention windows = 26 audio tokens.
        n_window=50,
        n_window_infer=200,
        text_layers=2,
        text_hidden=64,
        text_intermediate=128,
        text_heads=4,
        text_kv_heads=2,
        head_dim=16,
        vocab_size=400,
    ),
    # Qwen/Qwen3-ASR-0.6B's published config.json; the tokenizer is small, the model's vocabulary real.
    "0.6b": ModelShape(
        audio_layers=18,
        audio_heads=14,
        audio_d_model=896,
        audio_ffn=3584,
        audio_downsample=480,
        n_window=50,
        n_window_infer=800,
        text_layers=28,
        text_hidden=1024,
        text_intermediate=3072,
        text_heads=16,
        text_kv_heads=8,
        head_dim=128,
        vocab_size=2000,
        model_vocab_size=151936,
        tied_embeddings=True,
    ),
}


def build_tokenizer(vocab_size: int, corpus: list[str] | None = None) -> Any:
    """Train a small byte-level BPE tokenizer that keeps the real special tokens."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import Qwen2Tokenizer

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=SPECIAL_TOKENS,
        show_progress=False,
    )
    backend.train_from_iterator(corpus or _TOKENIZER_CORPUS.split("\n"), trainer=trainer)
    # Like the real tokenizer, <asr_text> is an added token but *not* a special one,
    # so skip_special_tokens=True keeps it in the decoded text.
    backend.add_tokens([AddedToken(ASR_TEXT_TAG, special=False, normalized=False)])

    return Qwen2Tokenizer(
        tokenizer_object=backend,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token=None,
        bos_token=None,
        extra_special_tokens={
            "audio_token": "<|audio_pad|>",
            "audio_bos_token": "<|audio_start|>",
            "audio_eos_token": "<|audio_end|>",
        },
    )


def sharpen_audio_attention(model: Any, factor: float = 16.0) -> None:
    """Scale the encoder's attention so that where it looks matters.

    At the default init (std 0.02) the convolution output is small beside
    the positional embedding and the attention nearly uniform, so the output
    barely depends on what other frames hold (windowed and full attention
    differ by 1e-7 of the output's scale): tests could not tell them apart.
    """
    import torch

    tower = model.model.audio_tower
    with torch.no_grad():
        for conv in (tower.conv2d1, tower.conv2d2, tower.conv2d3, tower.conv_out):
            conv.weight.mul_(factor / 2)
        for layer in tower.layers:
            for projection in (layer.self_attn.q_proj, layer.self_attn.k_proj, layer.self_attn.v_proj):
                projection.weight.mul_(factor)


def script_decoder(model: Any, tokenizer: Any, text: str) -> None:
    """Make greedy decoding write ``language English<asr_text>{text}`` for any audio.

    Attention and MLP outputs are zeroed, so the last hidden state is the
    current token's embedding and the next token depends on it alone: a chain
    through one-hot embeddings whose ``lm_head`` rows point at the successor.
    Every token outside the chain maps to a zero vector, whose argmax is id 0
    (``<|endoftext|>``, an end of sequence).
    """
    import torch

    newline = tokenizer("\n", add_special_tokens=False)["input_ids"]
    chain = newline + tokenizer(f"language English{ASR_TEXT_TAG}{text}", add_special_tokens=False)["input_ids"]
    chain.append(tokenizer.convert_tokens_to_ids("<|im_end|>"))
    if len(set(chain)) != len(chain):
        raise ValueError(f"script {text!r} repeats a token; choose words whose tokens differ")
    decoder = model.model.language_model
    hidden = model.config.text_config.hidden_size
    if len(chain) > hidden:
        raise ValueError(f"script {text!r} is longer than the hidden size {hidden}")
    if model.lm_head.weight is decoder.get_input_embeddings().weight:
        raise ValueError("a scripted decoder needs an output projection of its own (untied embeddings)")
    with torch.no_grad():
        for layer in decoder.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        decoder.norm.weight.fill_(1.0)
        embeddings = decoder.get_input_embeddings().weight
        embeddings.zero_()
        model.lm_head.weight.zero_()
        for position, (token, successor) in enumerate(zip(chain, chain[1:], strict=False)):
            embeddings[token, position] = 1.0
            model.lm_head.weight[successor, position] = 1.0


def build_random_model(out_dir: Path, shape_name: str = "tiny", seed: int = 0, script: str | None = None) -> Path:
    """Write a loadable random-weight Qwen3-ASR model folder to ``out_dir``."""
    model, processor = create_random_model(shape_name, seed, script)
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir, safe_serialization=True)
    processor.save_pretrained(out_dir)
    (out_dir / "random_model.json").write_text(
        json.dumps({"shape": shape_name, "seed": seed, "script": script}, indent=2) + "\n", encoding="utf-8"
    )
    return out_dir


def create_random_model(shape_name: str = "tiny", seed: int = 0, script: str | None = None) -> tuple[Any, Any]:
    """A random-weight model and its processor, in memory."""
    import torch

    shape = SHAPES[shape_name]
    corpus = None
    if script is not None and not script.isascii():
        # Byte-level BPE learns whole-character tokens only from text that uses them: without
        # this, a Chinese script is byte pieces that repeat (every ideograph shares lead bytes).
        # One character a line, so that each becomes a token of its own and none merge further.
        corpus = [*_TOKENIZER_CORPUS.split("\n"), *[c for c in script if not c.isspace()] * 20]
    tokenizer = build_tokenizer(shape.vocab_size, corpus)
    torch.manual_seed(seed)
    model = create_model(shape, tokenizer)
    if shape_name == "tiny":
        sharpen_audio_attention(model)
    if script is not None:
        script_decoder(model, tokenizer, script)
    return model, create_processor(tokenizer)


def create_model(shape: ModelShape, tokenizer: Any, languages: tuple[str, ...] = ("English",)) -> Any:
    """A Qwen3-ASR model of ``shape`` (random weights) for ``tokenizer``'s vocabulary, speaking ``languages``."""
    from transformers import Qwen3ASRConfig, Qwen3ASRForConditionalGeneration

    eos = [tokenizer.convert_tokens_to_ids(t) for t in ("<|im_end|>", "<|endoftext|>")]
    config = Qwen3ASRConfig(
        audio_config={
            "num_mel_bins": 128,
            "encoder_layers": shape.audio_layers,
            "encoder_attention_heads": shape.audio_heads,
            "encoder_ffn_dim": shape.audio_ffn,
            "d_model": shape.audio_d_model,
            "output_dim": shape.text_hidden,
            "n_window": shape.n_window,
            "n_window_infer": shape.n_window_infer,
            "downsample_hidden_size": shape.audio_downsample,
        },
        text_config={
            "vocab_size": shape.model_vocab_size or len(tokenizer),
            "hidden_size": shape.text_hidden,
            "intermediate_size": shape.text_intermediate,
            "num_hidden_layers": shape.text_layers,
            "num_attention_heads": shape.text_heads,
            "num_key_value_heads": shape.text_kv_heads,
            "head_dim": shape.head_dim,
            "max_position_embeddings": 65536,
            "tie_word_embeddings": shape.tied_embeddings,
        },
        audio_token_id=tokenizer.convert_tokens_to_ids("<|audio_pad|>"),
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=eos,
        tie_word_embeddings=shape.tied_embeddings,
        # Not a field of the -hf config (those speak every language of the table): a model of ours says.
        support_languages=list(languages),
    )
    model = Qwen3ASRForConditionalGeneration(config).eval()
    # The checkpoint's own generation defaults point at the real vocabulary.
    model.generation_config.eos_token_id = eos
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model


def create_processor(tokenizer: Any) -> Any:
    """The processor: the 128-bin log-mel features, the tokenizer, the chat template."""
    from transformers import Qwen3ASRFeatureExtractor, Qwen3ASRProcessor

    return Qwen3ASRProcessor(
        feature_extractor=Qwen3ASRFeatureExtractor(), tokenizer=tokenizer, chat_template=CHAT_TEMPLATE
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--shape", choices=sorted(SHAPES), default="tiny")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--script", help="text that greedy decoding writes for any audio")
    args = parser.parse_args()
    print(build_random_model(args.out_dir, args.shape, args.seed, args.script))


if __name__ == "__main__":
    main()
