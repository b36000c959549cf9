"""Find the alignment heads of a Qwen3-ASR model from speech with known word times.

For each utterance the transcript is fed to the decoder token by token
(teacher forcing) after the audio, and every head's most-attended audio token
is read for each text token, from the position that predicts it: the same row
the AlignAtt policy reads. A head scores by how often that token's time falls
inside its word (with ``tolerance`` seconds either side); the best heads are
written as ``{"alignment_heads_compact": [[layer, head], ...]}``.

Speech with known word times is made offline: each word is spoken alone by
espeak-ng, its silence trimmed, and the words are joined with short pauses.

Usage: ``python -m tools.alignment_heads MODEL_DIR [--out FILE] [--top N]``
(default output: MODEL_DIR/alignment_heads.json).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from transformers import DynamicCache

from tools import offline
from wyoming_qwen3.backends.simulkv.alignatt import AttentionRecorder, head_index, use_recording_attention
from wyoming_qwen3.backends.simulkv.settings import ALIGNMENT_HEADS_FILE, AlignmentHeads
from wyoming_qwen3.model.format import AUDIO_TOKENS_PER_SECOND, SAMPLE_RATE
from wyoming_qwen3.model.qwen import QwenAsrModel

from .speech import speak, trimmed

SENTENCES = [
    "turn on the kitchen lights",
    "set the bedroom temperature to twenty one degrees",
    "what is the weather like today",
    "close the blinds in the living room",
    "start the vacuum in the hall",
    "lock the front door please",
    "set a timer for five minutes",
    "dim the office lamp to fifty percent",
]
_PAUSE_SECONDS = 0.15


@dataclass(frozen=True)
class TimedWord:
    """A word and its time in the utterance, in seconds from the first sample."""

    text: str
    start: float
    end: float


@dataclass(frozen=True)
class Utterance:
    audio: np.ndarray
    words: list[TimedWord]


def speak_word(word: str, voice: str) -> np.ndarray:
    """One word from espeak-ng at 16 kHz, leading and trailing silence trimmed."""
    return trimmed(speak(word, voice))


def synthesize(sentence: str, voice: str = "en-us") -> Utterance:
    """Speech of a sentence whose word times are known exactly."""
    pause = np.zeros(int(_PAUSE_SECONDS * SAMPLE_RATE), dtype=np.float32)
    pieces: list[np.ndarray] = [pause]
    words: list[TimedWord] = []
    position = pause.shape[0]
    for text in sentence.split():
        samples = speak_word(text, voice)
        words.append(TimedWord(text, position / SAMPLE_RATE, (position + samples.shape[0]) / SAMPLE_RATE))
        pieces += [samples, pause]
        position += samples.shape[0] + pause.shape[0]
    return Utterance(np.concatenate(pieces), words)


@torch.inference_mode()
def attended_times(
    model: QwenAsrModel, utterance: Utterance, language: str = "English"
) -> tuple[np.ndarray, list[int]]:
    """[text tokens, layers, heads] audio time (s) each head attends when predicting each token.

    Also returns, for each text token, the index of the word it belongs to.
    """
    config = model.text_config
    every_head = range(config.num_attention_heads)
    heads_by_layer = head_index({layer: every_head for layer in range(config.num_hidden_layers)}, model.device)
    tokens: list[int] = []
    owners: list[int] = []
    for index, word in enumerate(utterance.words):
        ids = model.tokenizer((" " if index else "") + word.text, add_special_tokens=False)["input_ids"]
        tokens += ids
        owners += [index] * len(ids)
    prompt = model.prompt_ids("", language)
    audio = offline.audio_embeddings(model, utterance.audio).to(model.dtype)
    audio_span = (len(prompt.prefix), len(prompt.prefix) + audio.shape[0])
    embeds = torch.cat([model.embed_tokens(prompt.prefix), audio.unsqueeze(0), model.embed_tokens(prompt.suffix)], 1)
    cache = DynamicCache()
    position = embeds.shape[1]
    rows = []
    for token in tokens:
        recorder = AttentionRecorder(heads_by_layer)
        model.forward(embeds, position - embeds.shape[1], cache, alignment_recorder=recorder)
        attention = recorder.audio_attention(*audio_span)  # [layers * heads, audio tokens]
        rows.append(attention.argmax(dim=-1).view(config.num_hidden_layers, -1).cpu().numpy())
        embeds = model.embed_tokens([token])
        position += 1
    return np.stack(rows) / AUDIO_TOKENS_PER_SECOND, owners


def score_heads(times: np.ndarray, owners: list[int], words: list[TimedWord], tolerance: float = 0.1) -> np.ndarray:
    """[layers, heads] fraction of tokens whose attended time lies inside their word."""
    starts = np.array([words[o].start - tolerance for o in owners])[:, None, None]
    ends = np.array([words[o].end + tolerance for o in owners])[:, None, None]
    return ((times >= starts) & (times <= ends)).mean(axis=0)


def find_heads(model: QwenAsrModel, utterances: list[Utterance], top: int) -> tuple[AlignmentHeads, np.ndarray]:
    """The ``top`` heads that track word times best over all utterances, and all scores."""
    use_recording_attention(model.text_config)
    scores = np.mean(
        [score_heads(*attended_times(model, u), u.words) for u in utterances],
        axis=0,
    )
    order = np.argsort(-scores, axis=None, kind="stable")[:top]
    layers, heads = np.unravel_index(order, scores.shape)
    return AlignmentHeads(tuple((int(layer), int(head)) for layer, head in zip(layers, heads, strict=True))), scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path, help="Qwen3-ASR model folder")
    parser.add_argument("--out", type=Path, help=f"output file (default: MODEL/{ALIGNMENT_HEADS_FILE})")
    parser.add_argument("--top", type=int, default=10, help="how many heads to keep (default: 10)")
    parser.add_argument("--voice", default="en-us", help="espeak-ng voice (default: en-us)")
    parser.add_argument("--sentences", type=int, default=len(SENTENCES), help="how many built-in sentences to use")
    args = parser.parse_args()

    model = QwenAsrModel.load(args.model, "cpu")
    utterances = [synthesize(sentence, args.voice) for sentence in SENTENCES[: args.sentences]]
    heads, scores = find_heads(model, utterances, args.top)
    out = args.out or args.model / ALIGNMENT_HEADS_FILE
    heads.save(out)
    best = [round(float(scores[layer, head]), 3) for layer, head in heads.heads]
    print(json.dumps({"out": str(out), "heads": [list(h) for h in heads.heads], "scores": best}))


if __name__ == "__main__":
    main()
