"""What Qwen3-ASR hears and writes: 16 kHz mono audio, 13 audio tokens a second, ``language X<asr_text>text``.

These are facts of the model, kept here once and without torch, so that the
Wyoming side and the mlx backend can use them without loading it.
"""

from __future__ import annotations

from dataclasses import dataclass

SAMPLE_RATE = 16000
#: Hop of the mel frontend: one frame per 10 ms.
SAMPLES_PER_FRAME = 160
FRAMES_PER_SECOND = SAMPLE_RATE // SAMPLES_PER_FRAME
#: The audio encoder emits 13 embeddings per 100 mel frames (1 s of audio).
AUDIO_TOKENS_PER_SECOND = 13
#: Ends the ``language X`` preamble of every answer (an added token, not a special one).
ASR_TEXT_TAG = "<asr_text>"
#: What the tokenizer decodes a character's bytes into while they are incomplete, and bytes that make no
#: character at all.
UNDECODED = "\ufffd"


@dataclass(frozen=True)
class Transcription:
    """A decoded utterance: language name ('' when unknown) and text."""

    language: str
    text: str


#: Fast speech is about 5 tokens a second: every token budget allows this many.
MAX_TOKENS_PER_SECOND = 8


def max_new_tokens(seconds: float) -> int:
    """A generous token budget for a whole utterance of this much speech."""
    return 24 + int(MAX_TOKENS_PER_SECOND * seconds)


def without_undecoded(text: str) -> str:
    """Complete output without the bytes that make no character: the demo model in int8 wrote "关掉地下室���暖气"
    for "关掉地下室的暖气" (2026-12-07), and a client would have shown the three U+FFFD."""
    return text.replace(UNDECODED, "")


def parse_output(raw: str, forced_language: str | None, complete: bool = True) -> Transcription:
    """Split ``language X<asr_text>text`` into language and text.

    Like ``qwen_asr.inference.utils.parse_asr_output`` but without its
    repetition fix, which rewrites earlier text: streamed words cannot be taken
    back, so the offline and streaming paths must read the output the same way.
    While the output is incomplete and has no ``<asr_text>`` yet, the model is
    still writing the language preamble and there is no text. Complete output
    is ``without_undecoded``; incomplete output keeps its U+FFFD, for the
    streaming side to wait on (``text_units``).
    """
    if complete:
        raw = without_undecoded(raw)
    if forced_language:
        return Transcription(language=forced_language, text=raw.strip())
    meta, tag, text = raw.partition(ASR_TEXT_TAG)
    if not tag:
        return Transcription(language="", text=raw.strip() if complete else "")
    language = meta.strip().removeprefix("language").strip()
    if language.lower() == "none":
        # The model heard no language (yet): as in qwen-asr, the text after the tag still counts.
        language = ""
    return Transcription(language=language, text=text.strip())


def repeated_tail(tokens: list[int], max_period: int = 16) -> int:
    """How many tokens at the end repeat a block before them, as a decoding loop does; 0 if none.

    A block of 2 or more tokens must come 3 times, a single token 6 times
    ("no no no" is speech; six of a token are a loop).
    """
    for period in range(1, max_period + 1):
        block = tokens[-period:]
        if len(block) < period:
            break
        copies = 1
        while tokens[-period * (copies + 1) : len(tokens) - period * copies] == block:
            copies += 1
        if copies >= (6 if period == 1 else 3):
            return (copies - 1) * period
    return 0
