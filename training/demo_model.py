"""Train the demo model: a small Qwen3-ASR that understands Home Assistant commands.

Speech is synthesized with espeak-ng (several accents, variants, speeds and
pitches, with gain, noise and silence augmentation); a small model of the
exact Qwen3-ASR architecture is trained on it on the CPU, evaluated on
held-out word combinations spoken by held-out voices, and saved (float16)
with its alignment heads and a card saying how it was made and how it did.

Usage: script/make-demo-model [--minutes 40] [--out demo-model/wyoming_qwen3_demo]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import torch

from tools import offline
from tools.alignment_heads import find_heads, synthesize
from tools.corpus import (
    AREAS,
    CHINESE,
    DEVICES,
    FESTIVAL_VOICES,
    HELDOUT_VOICES,
    MANDARIN_TRAIN_VOICES,
    TEMPLATES,
    TRAIN_ACCENTS,
    TRAIN_VARIANTS,
    Speech,
    augment,
    commands,
    heldout_utterances,
    speak_timed,
    split_before_first_slot,
    tilted,
    warped,
    with_last_word_softer,
    with_trailing_noise,
    word_salad,
)
from tools.final_pass_audio import final_pass_audio
from tools.ha_client import streamed_audio
from tools.names import heldout_named, heldout_names, name_list, named_command, respelled, training_name
from tools.pauses import pause_corpus, paused_speech
from tools.random_model import ModelShape, build_tokenizer, create_model, create_processor
from tools.soft_tail import corpus as soft_tail_corpus
from tools.speech import OTHER_VOICES, speak, speak_with, trimmed
from tools.wer import cer, wer
from wyoming_qwen3.backends.simulkv.settings import AlignmentHeads
from wyoming_qwen3.model.format import SAMPLE_RATE
from wyoming_qwen3.model.qwen import QwenAsrModel
from wyoming_qwen3.server.context import build_context
from wyoming_qwen3.server.stream.silero import LocalDetector

DEMO_SHAPE = ModelShape(
    audio_layers=4,
    audio_heads=4,
    audio_d_model=160,
    audio_ffn=512,
    audio_downsample=48,
    n_window=50,
    n_window_infer=800,
    text_layers=3,
    text_hidden=160,
    text_intermediate=448,
    text_heads=4,
    text_kv_heads=2,
    head_dim=40,
    vocab_size=320,
)


#: Of the cut examples, the share that stops at the end of a word group with silence after it (the rest
#: are cut inside a word, as a streaming step hears them).
STOPPED_FRACTION = 1 / 3
#: Of the augmented commands, the share spoken with a pause at a random place (``tools.pauses``); their cut
#: example is the words before the pause and part of the pause.
PAUSED_FRACTION = 0.4
#: Of the augmented English commands of more than one word group, the share whose last word group is spoken
#: ``SOFT_LAST_WORD_DB`` softer (a speaker turning away), unless ``--soft`` says otherwise: the shipped model
#: of 2026-12-06, never trained so, dropped such a word 23 times in 24 where the one before it (trained long on
#: espeak-ng alone) heard 39 of 40.
SOFT_LAST_WORD = 0.2
SOFT_LAST_WORD_DB = (15.0, 30.0)
#: Of the soft-last-word commands, the share heard as the server's final pass hears them: cut where its turn holds
#: the silence back (``tools.final_pass_audio``). 2026.12.8, trained on whole audio only, lost or misheard 2 of 40
#: soft last words (``soft-tail --pause 0 0``) that it heard with nothing held back; the cut fell 0.01 s before
#: and 0.07 s after their end.
SERVER_CUT = 0.5
#: Of all utterances, the share resampled by a factor in ``WARP_FACTORS``: pitch, formants and pace moved
#: together, as a longer or shorter vocal tract and another speaker's pace would move them. Trained on
#: espeak-ng's and festival's voices alone, the demo model heard flite's deep rms voice at 48% WER.
#: Resampled by 1.3, that voice was heard at 29%: its pitch is part of its error, so the factors reach lower.
WARPED = 0.5
WARP_FACTORS = (0.75, 1.2)
#: Of all utterances, the share through a first-order filter of a coefficient in ``TILT_COEFFICIENTS``
#: (``tools.corpus.tilted``): the model trained without it heard held-out espeak-ng at 5.3% WER brightened by
#: 0.5 (0.8% as spoken) and 63% by 0.9, and flite's rms at 34% dulled by 0.5 (46% as spoken).
TILTED = 0.5
TILT_COEFFICIENTS = (-0.8, 0.7)
#: Names and terms in a training step's context, drawn once per batch so that its padding stays short: none
#: for a third of the steps, else up to the server's bound (a whole home's entities, 512 bytes).
CONTEXT_SIZES = (0, 0, 0, 2, 4, 8, 16, 32, 64)
#: How often a command that says a home's own name has it in its context; the rest must be spelled from the
#: audio, so the model learns both to read the list and not to depend on it.
NAME_IN_CONTEXT = 0.8
#: For this share of the training, a command that says a made-up name always has it in a list of 1-3: two
#: runs with long lists from the start (2026-12-05, 3300 steps) spelled names by ear and never learned to
#: copy them; a short list makes the name the obvious source before the model must find it among 64.
NAMES_FIRST = 0.4
#: Of the commands with their made-up name in the context, the share whose name is respelled there and in the
#: answer, so that only the context tells the spelling.
RESPELLED = 0.5
#: Of the named commands (frozen encoder only), the share whose name's audio tokens are zeroed and whose context
#: is that name alone: the answer's name can only be copied, which teaches the copy itself.
MASKED_NAME = 0.25
#: Of the named commands (frozen encoder only), the share whose name's audio is zeroed after its first
#: ``ONSET_TOKENS`` and whose context holds it among 2-16 names: the model must choose the name by its onset,
#: then copy the rest, as it chooses a name among a home's by the sound of it.
ONSET_MASKED = 0.25
ONSET_TOKENS = 2  # 0.16 s at AUDIO_TOKENS_PER_SECOND
#: Weight of a made-up name's tokens in the loss. With the two masked shares above, this weight and a peak
#: learning rate of 1.5e-3, the model learned to copy held-out names from its context (2026-12-06, 5700 steps:
#: WER 9.4% with the name among 16 in the context, 17.5% without); six runs with only the name alone masked
#: (0.3 of the named commands, half of them cut before the name), weight 1 and 8e-4 found no copy in ~13k steps.
NAME_WEIGHT = 3.0
#: How a training sample hides a made-up name's audio: not at all, wholly, or after ``ONSET_TOKENS``.
NameMask = Literal["", "name", "after-onset"]
#: The audio encoder's tokens per second (100 feature frames a second, three stride-2 convolutions).
AUDIO_TOKENS_PER_SECOND = 12.5
#: Held-out rare-name commands: the spoken name among this many others.
HELDOUT_CONTEXT_NAMES = 16
#: Held-out commands that say a held-out made-up name.
HELDOUT_NAMED = 60


@dataclass
class Example:
    features: torch.Tensor  # [128, frames]
    text: str
    voice: str
    #: The audio cut inside a word, and the words wholly heard before the cut.
    prefix_features: torch.Tensor | None = None
    prefix_text: str = ""
    language: str = "English"
    #: A made-up name the command says, which its context may hold.
    name: str = ""
    #: The audio embeddings of ``features`` and ``prefix_features``, computed once when the encoder is frozen.
    embeds: torch.Tensor | None = None
    prefix_embeds: torch.Tensor | None = None
    #: Where the made-up name is said (seconds), if it is.
    name_span: tuple[float, float] | None = None


@dataclass(frozen=True)
class Sample:
    """One training sequence: prompt, audio and answer embedded, the answer's ids and where it starts."""

    embeds: torch.Tensor
    answer_ids: list[int]
    start: int
    #: Which answer tokens spell the made-up name (weighted ``NAME_WEIGHT``).
    name_tokens: list[bool]


@dataclass(frozen=True)
class Script:
    """What to synthesize: a text, a voice, its language, and the made-up name it says (if any)."""

    text: str
    voice: str
    language: str = "English"
    name: str = ""


def tokenizer_corpus() -> list[str]:
    words = " ".join(TEMPLATES + AREAS + DEVICES).replace("{", " ").replace("}", " ")
    numbers = "one two three four five six seven eight nine ten eleven twelve fifteen twenty thirty forty fifty"
    return [words, numbers, "language English", "sixty seventy eighty ninety degrees percent minutes"] * 4


def synthesize_examples(
    qwen: QwenAsrModel, scripts: list[Script], seed: int, augmented: bool, soft_share: float = SOFT_LAST_WORD
) -> list[Example]:
    rng = np.random.default_rng(seed)
    examples = []
    detector: LocalDetector | None = None
    for script in scripts:
        text, voice = script.text, script.voice
        speed, pitch = int(rng.integers(130, 200)), int(rng.integers(30, 70))
        if augmented and len(text.split()) > 1 and rng.random() < PAUSED_FRACTION:
            speech, stopped = paused_speech(text, voice, speed, pitch, rng)
        else:
            speech = speak_timed(text, voice, speed, pitch)
            stopped = speech.stopped_before_word(rng) if augmented and rng.random() < STOPPED_FRACTION else None
        # Another voice and another microphone: the cut example hears the same voice as the whole.
        for share, transform, amounts in ((WARPED, warped, WARP_FACTORS), (TILTED, tilted, TILT_COEFFICIENTS)):
            if augmented and rng.random() < share:
                amount = float(rng.uniform(*amounts))
                speech = transform(speech, amount)
                stopped = transform(stopped, amount) if stopped is not None else None
        loudness = None
        if augmented and script.language == "English" and len(speech.word_starts) > 1 and rng.random() < soft_share:
            speech = with_last_word_softer(speech, float(rng.uniform(*SOFT_LAST_WORD_DB)))
            # Noise set from the whole command's level (half the time 15-45 dB under it) can bury a word 15-30 dB
            # under it; set from the word's own, the word stays to be heard.
            loudness = float(np.mean(speech.audio[speech.last_word_sample :] ** 2))
        if augmented:
            speech = augment(speech, rng, loudness)
        if loudness is not None and rng.random() < SERVER_CUT:
            detector = detector or LocalDetector()
            heard_audio = final_pass_audio(speech.audio, detector)
            speech = Speech(speech.text, heard_audio, speech.word_starts, speech.word_ends)
        if stopped is not None:  # the words before a pause, then the room: what the model hears mid-pause
            stopped = augment(stopped, rng)
            prefix, heard = stopped.audio, stopped.text
        else:
            prefix, heard = speech.cut_inside_word(rng)
        name_span = None
        if script.name and script.name in speech.text:
            at = speech.text.index(script.name)
            word = next((i for i, (characters, _) in enumerate(speech.word_starts) if characters == at), None)
            if word is not None:
                name_span = (speech.word_starts[word][1], speech.ends[word])
        examples.append(
            Example(
                offline.features(qwen, speech.audio).clone(),
                text,
                voice,
                offline.features(qwen, prefix).clone(),
                heard,
                script.language,
                script.name,
                name_span=name_span,
            )
        )
    return examples


class Trainer:
    """Teacher-forced next-token training on prompt + audio + answer."""

    def __init__(self, qwen: QwenAsrModel, prefix_fraction: float) -> None:
        self.qwen = qwen
        self.prefix_fraction = prefix_fraction
        self.tokenizer = qwen.tokenizer
        self.rng = random.Random(0)
        self.heldout_names = frozenset(heldout_names())

    def sample(self, example: Example, context: str, spelling: str, mask: NameMask = "") -> Sample:
        """Input embeddings, answer ids, where the answer starts, and which answer tokens spell the made-up name;
        the name (if any) spelled ``spelling``, its audio zeroed wholly (``mask`` "name") or after its onset
        ("after-onset")."""
        features, embeds, text = example.features, example.embeds, example.text
        # A streaming step transcribes audio that stops mid-sentence, often mid-word; trained on
        # whole utterances only, the model finished the sentence from the grammar instead. A masked name is
        # always whole: the cut may end before it.
        if not mask and example.prefix_features is not None and self.rng.random() < self.prefix_fraction:
            features, embeds, text = example.prefix_features, example.prefix_embeds, example.prefix_text
        forced = self.rng.random() < 0.5
        prompt = self.qwen.prompt_ids(context, example.language if forced else None)
        if example.name:
            text = text.replace(example.name, spelling)
        answer = ("" if forced else f"language {example.language}<asr_text>") + text
        encoded = self.tokenizer(answer, add_special_tokens=False, return_offsets_mapping=True)
        answer_ids = encoded["input_ids"] + [self.tokenizer.convert_tokens_to_ids("<|im_end|>")]
        name_tokens = [False] * len(answer_ids)
        if example.name and spelling in text:
            begin = answer.index(spelling, len(answer) - len(text))
            end = begin + len(spelling)
            for i, (first, last) in enumerate(encoded["offset_mapping"]):
                name_tokens[i] = last > begin and first < end
        audio = embeds if embeds is not None else offline.embed_features(self.qwen, self.spec_augment(features))
        if mask and example.name_span is not None:
            begin, end = (int(t * AUDIO_TOKENS_PER_SECOND) for t in example.name_span)
            audio = audio.clone()
            audio[begin + (ONSET_TOKENS if mask == "after-onset" else 0) : end + 1] = 0
        embeds = torch.cat(
            [self.qwen.embed_tokens(prompt.prefix)[0], audio, self.qwen.embed_tokens(prompt.suffix + answer_ids)[0]]
        )
        return Sample(embeds, answer_ids, len(prompt.prefix) + audio.shape[0] + len(prompt.suffix), name_tokens)

    def context(self, example: Example, size: int, progress: float) -> tuple[str, str, NameMask]:
        """Names and terms as Home Assistant sends them: a home's, up to the server's bound; a command that says
        a made-up name mostly has it among them (always, in a short list, early in training), then often
        respelled (``respelled``), in the list and the answer alike; or, with the name's audio masked, the name
        alone (a pure copy) or among others with its onset heard. Returns the context, the spelling and the
        mask (``sample``)."""
        # Only audio embeddings computed once can be masked (--frozen-encoder); else the name alone in the
        # context would come with the name's audio, no copy.
        maskable = example.embeds is not None and example.name_span is not None
        draw = self.rng.random()
        if example.name and maskable and draw < MASKED_NAME:
            return build_context("", [example.name]), example.name, "name"
        if example.name and maskable and draw < MASKED_NAME + ONSET_MASKED:
            count = self.rng.choice((2, 4, 8, 16))
            return name_list(count, self.rng, example.name, self.heldout_names), example.name, "after-onset"
        if example.name and (progress < NAMES_FIRST or self.rng.random() < NAME_IN_CONTEXT):
            spelling = respelled(example.name, self.rng) if self.rng.random() < RESPELLED else example.name
            count = self.rng.choice((1, 2, 3)) if progress < NAMES_FIRST else max(size, 1)
            return name_list(count, self.rng, spelling, self.heldout_names), spelling, ""
        return name_list(size, self.rng, exclude=self.heldout_names), example.name, ""

    def spec_augment(self, features: torch.Tensor) -> torch.Tensor:
        """Mask a random band of mel bins and of frames, differently every epoch."""
        if self.rng.random() < 0.5:
            return features
        features = features.clone()
        low = features.min()
        width = self.rng.randrange(1, 16)
        start = self.rng.randrange(0, features.shape[0] - width)
        features[start : start + width] = low
        frames = self.rng.randrange(1, 20)
        begin = self.rng.randrange(0, max(1, features.shape[1] - frames))
        features[:, begin : begin + frames] = low
        return features

    def loss(self, batch: list[Example], progress: float) -> torch.Tensor:
        """Weighted cross-entropy of the batch's answers (``NAME_WEIGHT`` on made-up names); ``progress`` is the
        share of the training budget spent."""
        size = self.rng.choice(CONTEXT_SIZES)
        samples = [self.sample(e, *self.context(e, size, progress)) for e in batch]
        length = max(s.embeds.shape[0] for s in samples)
        hidden = samples[0].embeds.shape[1]
        embeds = torch.zeros(len(samples), length, hidden)
        mask = torch.zeros(len(samples), length, dtype=torch.long)
        labels = torch.full((len(samples), length), -100, dtype=torch.long)
        weights = torch.zeros(len(samples), length)
        for row, s in enumerate(samples):
            embeds[row, : s.embeds.shape[0]] = s.embeds
            mask[row, : s.embeds.shape[0]] = 1
            # The position before each answer token predicts it.
            answer = slice(s.start - 1, s.start - 1 + len(s.answer_ids))
            labels[row, answer] = torch.tensor(s.answer_ids)
            weights[row, answer] = torch.tensor([NAME_WEIGHT if n else 1.0 for n in s.name_tokens])
        positions = torch.arange(length).expand(len(samples), -1)
        out = self.qwen.decoder(inputs_embeds=embeds, attention_mask=mask, position_ids=positions, use_cache=False)
        logits = self.qwen.model.lm_head(out.last_hidden_state)
        losses = torch.nn.functional.cross_entropy(
            logits.view(-1, logits.shape[-1]), labels.view(-1), reduction="none"
        ).view(labels.shape)
        return (losses * weights).sum() / weights.sum()


def freeze_encoder(qwen: QwenAsrModel, examples: list[Example]) -> None:
    """Fix the audio encoder and projector, and give every example its audio embeddings once (no SpecAugment)."""
    tower = qwen.model.model
    for module in (tower.audio_tower, tower.multi_modal_projector):
        module.requires_grad_(False)
    with torch.no_grad():
        for example in examples:
            example.embeds = offline.embed_features(qwen, example.features)
            if example.prefix_features is not None:
                example.prefix_embeds = offline.embed_features(qwen, example.prefix_features)


def card_checks(
    qwen: QwenAsrModel,
    heldout_pairs: list[tuple[str, str]],
    mandarin_pairs: list[tuple[str, str]],
    heldout_rare: list[dict[str, str]],
) -> dict[str, float]:
    """The card's offline checks (no language forced), each held-out utterance in its own voice, and printed."""

    def scored(pairs: list[tuple[str, np.ndarray]], context: str = "") -> float:
        return wer([(t, offline.transcribe(qwen, a, context).text) for t, a in pairs])

    texts = [t for t, _ in heldout_pairs]
    spoken = [speak(t, v, 165, 50) for t, v in heldout_pairs]
    # Another synthesizer family, never trained on: flite's voices in turn, as script/benchmark wer --synthesizer
    # flite speaks them. (Until 2026-12-07 the card kept one audio per text: the 100 commands have 55 texts, so
    # a repeated text was scored in the last voice that spoke it, and flite's 18.4% read 9.9%.)
    flite = OTHER_VOICES["flite"]
    by_flite = [speak_with("flite", t, flite[i % len(flite)]) for i, t in enumerate(texts)]
    # The last word group 20-30 dB softer in place, with no pause before it (script/benchmark soft-tail --pause 0 0
    # also trims espeak-ng's silence at the join and lays a room under the word: tools.corpus.with_soft_last_word).
    soft_db = np.random.default_rng(7)
    softened = [
        with_last_word_softer(speak_timed(t, v, 165, 50), float(soft_db.uniform(20, 30))).audio
        for t, v in heldout_pairs
    ]
    # The soft-tail check's 40 commands with no pause before the soft word, streamed as Home Assistant streams
    # them (audio-stop 0.7 s after), as the server's final pass hears them (script/benchmark soft-tail --pause 0 0).
    detector = LocalDetector()
    server_cut = [
        (tail.text, final_pass_audio(streamed_audio(tail.audio, 0.7), detector))
        for tail in soft_tail_corpus(40, pause=(0.0, 0.0))
    ]
    trailing = np.random.default_rng(5)
    noisy = [with_trailing_noise(a, trailing.uniform(0, 2.5), trailing) for a in spoken]
    # The words before a speaker's pause ("set a timer for"), then 0.3 s of the room: what server endpointing
    # decides on.
    before_pause = [(h[0], v) for t, v in heldout_pairs if (h := split_before_first_slot(t)) is not None]
    heads = [(h, with_trailing_noise(trimmed(speak(h, v, 165, 50)), 0.3, trailing)) for h, v in before_pause]
    # Pauses anywhere (held-out commands, voices and rates): the whole command, and the words before the
    # pause with 0.3 s of it, as the server's endpoint decides on them.
    paused = pause_corpus(100, seed=0)
    # A home's own names (held out, never trained) with and without them in the context; the ordinary commands
    # with an unrelated list as long as the server's bound; Mandarin.
    named_audio = [speak(u["text"], u["voice"], 165, 50) for u in heldout_rare]
    unrelated = name_list(64, random.Random(7), exclude=frozenset(heldout_names()))
    checks = {
        "heldout_wer_offline": scored(list(zip(texts, spoken, strict=True))),
        "heldout_wer_offline_flite": scored(list(zip(texts, by_flite, strict=True))),
        "heldout_wer_offline_last_word_20_30_db_softer": scored(list(zip(texts, softened, strict=True))),
        "heldout_wer_offline_soft_last_word_as_the_server_cuts": scored(server_cut),
        "heldout_wer_offline_trailing_noise_0_2_5_s": scored(list(zip(texts, noisy, strict=True))),
        "heldout_wer_offline_words_before_a_pause": scored(heads),
        "heldout_wer_offline_paused_anywhere": scored(
            [(p.text, with_trailing_noise(p.audio, 0.3, trailing)) for p in paused]
        ),
        "heldout_wer_offline_words_before_a_pause_anywhere": scored(
            [(p.first, p.audio[: p.pause_start + int(0.3 * SAMPLE_RATE)]) for p in paused]
        ),
        "heldout_wer_offline_named_in_context": wer(
            [
                (u["text"], offline.transcribe(qwen, a, u["context"]).text)
                for u, a in zip(heldout_rare, named_audio, strict=True)
            ]
        ),
        "heldout_wer_offline_named_not_in_context": scored(
            [(u["text"], a) for u, a in zip(heldout_rare, named_audio, strict=True)]
        ),
        "heldout_wer_offline_unrelated_list_512_bytes": scored(list(zip(texts, spoken, strict=True)), unrelated),
        "heldout_cer_offline_mandarin": cer(
            [(t, offline.transcribe(qwen, speak(t, v, 165, 50)).text) for t, v in mandarin_pairs]
        ),
    }
    for name, value in checks.items():
        print(f"{name}: {value:.1%}", flush=True)
    return {name: round(value, 4) for name, value in checks.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=40.0, help="training time budget (default: 40)")
    parser.add_argument("--train", type=int, default=6000, help="training utterances")
    parser.add_argument("--batch", type=int, default=24)
    parser.add_argument("--out", type=Path, default=Path("demo-model/wyoming_qwen3_demo"))
    parser.add_argument("--salad", type=float, default=0.3, help="fraction of word-salad utterances (default: 0.3)")
    parser.add_argument("--lr", type=float, default=2e-3, help="peak learning rate (default: 2e-3)")
    parser.add_argument(
        "--prefix", type=float, default=0.5, help="fraction of steps on audio cut mid-utterance (default: 0.5)"
    )
    parser.add_argument(
        "--border", type=float, default=0.5, help="AlignAtt border in seconds saved with the model (default: 0.5)"
    )
    parser.add_argument(
        "--min-probability",
        type=float,
        default=0.9,
        help="least probability of an early token, saved with the model (default: 0.9)",
    )
    parser.add_argument("--init", type=Path, help="continue training this demo model instead of starting afresh")
    parser.add_argument(
        "--mandarin", type=int, default=0, help="of the training utterances, Mandarin ones (default: 0)"
    )
    parser.add_argument(
        "--named", type=float, default=0.0, help="fraction of English commands that say a made-up name (default: 0)"
    )
    parser.add_argument(
        "--festival",
        type=float,
        default=0.0,
        help="fraction of English utterances spoken by festival's voices, not espeak-ng's (default: 0); flite, "
        "another family, stays held out for the card's check",
    )
    parser.add_argument(
        "--soft",
        type=float,
        default=SOFT_LAST_WORD,
        help="of the augmented English commands, the share whose last word is 15-30 dB softer "
        f"(default: {SOFT_LAST_WORD})",
    )
    parser.add_argument(
        "--frozen-encoder",
        action="store_true",
        help="train the decoder alone on audio embeddings computed once: a step takes a third of the time "
        "(0.25 s against 0.7 s for 24 utterances), for skills of the decoder such as reading the context",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=1,
        help="draw of the training utterances (texts, voices, rates, augmentation); a new one when continuing "
        "gives the model speech it has not memorised (default: 1)",
    )
    parser.add_argument(
        "--mix",
        type=Path,
        nargs=2,
        metavar=("FIRST", "SECOND"),
        help="train nothing: write to --out the weighted mean of two demo models trained from one model "
        "(--mix-weight of the first), with its heads and the card's checks",
    )
    parser.add_argument("--mix-weight", type=float, default=0.5, help="the first model's share in --mix (default: 0.5)")
    parser.add_argument(
        "--checks-only",
        action="store_true",
        help="train nothing: run the card's checks again on the model in --out and write them on its card",
    )
    args = parser.parse_args()
    heldout_pairs = heldout_utterances(100, seed=2)
    mandarin_pairs = heldout_utterances(100, seed=2, language=CHINESE)
    heldout_rare = heldout_named(HELDOUT_NAMED, HELDOUT_CONTEXT_NAMES)
    if args.checks_only:
        card_file = args.out / "demo_model.json"
        checks = card_checks(QwenAsrModel.load(args.out, "cpu"), heldout_pairs, mandarin_pairs, heldout_rare)
        card_file.write_text(json.dumps({**json.loads(card_file.read_text()), **checks}, indent=1) + "\n")
        return
    if args.mix:
        model, processor, cards = mixed_model(*args.mix, args.mix_weight)
        card = {"made_by": made_by(), "mixed_from": cards, "mix_weight": args.mix_weight}
        write_model(model, processor, card, args, heldout_pairs, mandarin_pairs, heldout_rare)
        return
    torch.manual_seed(0)
    began = time.time()

    previous_card = None
    if args.init:
        from transformers import Qwen3ASRForConditionalGeneration, Qwen3ASRProcessor

        model = Qwen3ASRForConditionalGeneration.from_pretrained(str(args.init), dtype=torch.float32).train()
        processor = Qwen3ASRProcessor.from_pretrained(str(args.init))
        tokenizer = processor.tokenizer
        previous_card = json.loads((args.init / "demo_model.json").read_text())
    else:
        tokenizer = build_tokenizer(DEMO_SHAPE.vocab_size, tokenizer_corpus())
        model = create_model(DEMO_SHAPE, tokenizer).train()
        processor = create_processor(tokenizer)
    if args.mandarin and "Chinese" not in model.config.support_languages:
        # The server refuses a language the model's config does not list (a model trained on Mandarin
        # that says only English answered "zh" with unknown-language).
        model.config.support_languages = [*model.config.support_languages, "Chinese"]
    params = sum(p.numel() for p in model.parameters())
    print(f"{params / 1e6:.2f} M parameters, vocabulary {len(tokenizer)}", flush=True)

    rng = random.Random(args.seed)
    train_voices = [a + v for a in TRAIN_ACCENTS for v in TRAIN_VARIANTS]
    english = args.train - args.mandarin
    salad = int(english * args.salad)
    named = int((english - salad) * args.named)

    def english_voice() -> str:
        return rng.choice(FESTIVAL_VOICES if rng.random() < args.festival else train_voices)

    scripts = [Script(c.text, english_voice()) for c in commands(english - salad - named, False, args.seed)]
    scripts += [Script(t, english_voice()) for t in word_salad(salad, args.seed + 3)]
    names_rng, exclude = random.Random(args.seed + 5), frozenset(heldout_names())
    for command in (named_command(training_name(names_rng, exclude), names_rng) for _ in range(named)):
        scripts.append(Script(command.command.text, english_voice(), name=command.name))
    mandarin_salad = int(args.mandarin * args.salad)
    mandarin = [c.text for c in commands(args.mandarin - mandarin_salad, False, args.seed, CHINESE)]
    mandarin += word_salad(mandarin_salad, args.seed + 4, CHINESE)
    scripts += [Script(t, rng.choice(MANDARIN_TRAIN_VOICES), "Chinese") for t in mandarin]
    trainer = Trainer(QwenAsrModel(model, processor, torch.device("cpu")), args.prefix)
    train = synthesize_examples(trainer.qwen, scripts, args.seed, True, args.soft)
    print(f"synthesized {len(train)} utterances in {time.time() - began:.0f} s", flush=True)
    if args.frozen_encoder:
        freeze_encoder(trainer.qwen, train)
        print(f"encoded them once in {time.time() - began:.0f} s", flush=True)

    trained = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trained, lr=args.lr, weight_decay=0.01)
    budget = args.minutes * 60
    train_began = time.time()
    step = 0
    train.sort(key=lambda e: e.features.shape[1])
    batches = [train[i : i + args.batch] for i in range(0, len(train), args.batch)]
    while time.time() - train_began < budget:
        for batch in random.Random(step).sample(batches, len(batches)):
            progress = (time.time() - train_began) / budget
            if progress >= 1:
                break
            lr = args.lr * min(1.0, (step + 1) / 200) * 0.5 * (1 + math.cos(math.pi * progress))
            for group in optimizer.param_groups:
                group["lr"] = lr
            loss = trainer.loss(batch, progress)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(trained, 1.0)
            optimizer.step()
            step += 1
            if step % 50 == 0:
                print(f"step {step} loss {loss.item():.3f} lr {lr:.2e} {time.time() - train_began:.0f} s", flush=True)

    card = {
        "made_by": made_by(),
        "continued_from": previous_card,
        "word_salad_fraction": args.salad,
        "mandarin_utterances": args.mandarin,
        "named_fraction": args.named,
        "name_in_context_fraction": NAME_IN_CONTEXT,
        "respelled_fraction": RESPELLED,
        "masked_name_fraction": MASKED_NAME,
        "onset_masked_fraction": ONSET_MASKED,
        "name_loss_weight": NAME_WEIGHT,
        "names_first_fraction": NAMES_FIRST,
        "prefix_fraction": args.prefix,
        "frozen_encoder": args.frozen_encoder,
        "parameters": params,
        "train_utterances": len(train),
        "train_seed": args.seed,
        "train_voices": train_voices,
        "heldout_voices": HELDOUT_VOICES,
        "steps": step,
        "minutes": round((time.time() - train_began) / 60, 1),
        "soft_last_word_fraction": args.soft,
        "soft_last_word_db": SOFT_LAST_WORD_DB,
        "warped_fraction": WARPED,
        "warp_factors": WARP_FACTORS,
        "tilted_fraction": TILTED,
        "tilt_coefficients": TILT_COEFFICIENTS,
        "festival_fraction": args.festival,
        "festival_voices": FESTIVAL_VOICES,
        "stopped_fraction": STOPPED_FRACTION,
        "paused_fraction": PAUSED_FRACTION,
    }
    write_model(model, processor, card, args, heldout_pairs, mandarin_pairs, heldout_rare)


def made_by() -> str:
    return "script/make-demo-model " + " ".join(sys.argv[1:])


def mixed_model(first: Path, second: Path, weight: float) -> tuple[torch.nn.Module, object, list[dict]]:
    """The weighted mean of two models' weights, the first's processor, and both cards.

    Two continuations of one model from different draws of speech sit near each other, and their mean
    kept the better of each: the thirteenth and fourteenth candidates (2026-12-08) at 0.6 of the
    thirteenth spelled a soft last word right in 37 of 40 against 35 and 34, Mandarin CER 2.8% against
    2.2% and 3.1% (docs/demo-model.md).
    """
    from transformers import Qwen3ASRForConditionalGeneration, Qwen3ASRProcessor

    model = Qwen3ASRForConditionalGeneration.from_pretrained(str(first), dtype=torch.float32)
    other = Qwen3ASRForConditionalGeneration.from_pretrained(str(second), dtype=torch.float32).state_dict()
    weights = model.state_dict()
    if weights.keys() != other.keys() or any(weights[k].shape != other[k].shape for k in weights):
        raise SystemExit(f"{first} and {second} are not the same shape: only continuations of one model mix")
    model.load_state_dict(
        {k: weight * v + (1 - weight) * other[k] if v.is_floating_point() else v for k, v in weights.items()}
    )
    cards = [json.loads((folder / "demo_model.json").read_text()) for folder in (first, second)]
    return model, Qwen3ASRProcessor.from_pretrained(str(first)), cards


def write_model(
    model: torch.nn.Module,
    processor: object,
    card: dict,
    args: argparse.Namespace,
    heldout_pairs: list[tuple[str, str]],
    mandarin_pairs: list[tuple[str, str]],
    heldout_rare: list[dict],
) -> None:
    """Save the model in half precision to ``args.out``, with its alignment heads, the held-out sets and its
    card (``card`` and the card's checks)."""
    model.eval()
    args.out.mkdir(parents=True, exist_ok=True)
    model.half().save_pretrained(args.out, safe_serialization=True)
    processor.save_pretrained(args.out)
    qwen = QwenAsrModel.load(args.out, "cpu")

    checks = card_checks(qwen, heldout_pairs, mandarin_pairs, heldout_rare)

    heads, _ = find_heads(qwen, [synthesize(c.text, "en-us") for c in commands(8, False, seed=3)], top=8)
    # This small model is unsure where it has heard little, and guesses there: at the 0.5 s border
    # alone, on `script/benchmark wer --speed 4 --border-seconds B --min-probability P` (5.3%
    # offline), it streamed 9.1% ("stop the music in the bathroom" as "side room fifty window
    # bathroom"); a 2 s border gave 5.3% but partial words before the end on 6 of 59 commands over
    # 2 s. Its wrong early guesses are its unsure tokens: 0.5 s with a least probability of 0.9
    # streams 5.3% (equal to offline) and early words on 44 of 59.
    AlignmentHeads(heads.heads, args.border, args.min_probability).save(args.out / "alignment_heads.json")
    (args.out / "heldout.json").write_text(
        json.dumps(
            {
                "utterances": [{"text": t, "voice": v} for t, v in heldout_pairs],
                "named": heldout_rare,
                "mandarin": [{"text": t, "voice": v} for t, v in mandarin_pairs],
            },
            indent=1,
            ensure_ascii=False,
        )
        + "\n"
    )
    card = {**card, **checks}
    (args.out / "demo_model.json").write_text(json.dumps(card, indent=1) + "\n")
    print(json.dumps(card), flush=True)


if __name__ == "__main__":
    main()
