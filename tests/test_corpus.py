"""Training and benchmark speech: repeatable, and with word times that match the words."""

from __future__ import annotations

import random
import re
import shutil

import numpy as np
import pytest

from tools.corpus import FESTIVAL_VOICES, HELDOUT_VOICES, augment, speak_timed, tilted, warped, with_last_word_softer
from tools.pauses import PAUSE_SECONDS, pause_corpus, paused_speech
from tools.speech import OTHER_VOICES, speak, speak_with
from training.demo_model import TRAIN_ACCENTS, TRAIN_VARIANTS
from wyoming_qwen3.model.format import SAMPLE_RATE

TEXT = "set the kitchen temperature to twenty five degrees"


def test_speech_is_the_same_on_every_call() -> None:
    # Benchmarks compare runs; sox's default dither made them differ.
    assert np.array_equal(speak(TEXT, "en-gb", 160, 50), speak(TEXT, "en-gb", 160, 50))


def test_timed_speech_is_the_commands_speech_with_its_voice_and_speed() -> None:
    for speed in (130, 200):
        timed = speak_timed(TEXT, "en-gb-scotland+f2", speed, 40)
        spoken = speak(TEXT, "en-gb-scotland+f2", speed, 40)
        assert abs(len(timed.audio) - len(spoken)) < 0.05 * len(spoken)
    slow, fast = (len(speak_timed(TEXT, "en-us", s, 50).audio) for s in (120, 220))
    assert slow > 1.5 * fast


def test_word_starts_are_in_order_at_word_boundaries() -> None:
    speech = speak_timed(TEXT, "en-us+m1", 170, 50)
    characters = [c for c, _ in speech.word_starts]
    times = [t for _, t in speech.word_starts]
    assert characters[0] == 0 and times[0] < 0.1
    assert all(TEXT[c - 1] == " " for c in characters[1:])
    assert characters == sorted(set(characters)) and times == sorted(times)
    # espeak-ng groups unstressed words with their neighbour, but not many of them.
    assert len(characters) >= len(TEXT.split()) - 2
    assert times[-1] < len(speech.audio) / SAMPLE_RATE - 0.2


def test_a_cut_inside_a_word_hears_only_the_words_before_it() -> None:
    speech = speak_timed(TEXT, "en-us", 160, 50)
    starts = dict(speech.word_starts)
    rng = np.random.default_rng(0)
    heard_lengths = set()
    for _ in range(30):
        audio, heard = speech.cut_inside_word(rng)
        assert TEXT.startswith(heard) and (heard == "" or TEXT[len(heard)] == " ")
        cut_word = len(heard) + 1 if heard else 0
        assert audio.shape[0] >= starts[cut_word] * SAMPLE_RATE
        heard_lengths.add(len(heard))
    assert len(heard_lengths) > 3


def rms(audio: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(audio))))


def test_espeak_ngs_speech_has_a_start_for_each_word_and_none_at_the_end() -> None:
    """libespeak-ng sometimes adds a word event at -1 at a text's end (2026-12-07: "lock the back door" in en-us at
    187 and 47, after other texts): no word starts there."""
    voices = [accent + variant for accent in TRAIN_ACCENTS for variant in TRAIN_VARIANTS]
    rng = random.Random(1)  # the sixth draw is that voice: the event came then, not for that voice alone
    for _ in range(20):
        voice, speed, pitch = rng.choice(voices), rng.randint(130, 199), rng.randint(30, 69)
        for text in ("lock the back door", "set a timer for ten minutes"):
            speech = speak_timed(text, voice, speed, pitch)
            assert [c for c, _ in speech.word_starts] == [m.start() for m in re.finditer(r"\S+", text)]
            assert speech.word_starts[-1][1] * SAMPLE_RATE < speech.audio.shape[0] - 0.1 * SAMPLE_RATE


def test_augmented_speech_with_a_softer_loudness_gets_quieter_noise_and_the_same_times() -> None:
    """A soft last word's loudness sets the noise under it; the draws, and with them the times, stay the same."""
    speech = speak_timed(TEXT, "en-us", 160, 50)
    quieter = 0
    for seed in range(8):
        loud = augment(speech, np.random.default_rng(seed))
        soft = augment(speech, np.random.default_rng(seed), float(np.mean(speech.audio**2)) / 1000)
        assert soft.word_starts == loud.word_starts and soft.audio.shape == loud.audio.shape
        assert rms(soft.audio) <= rms(loud.audio) + 1e-6
        quieter += rms(loud.audio - soft.audio) > 1e-4
    assert 0 < quieter < 8  # half the noise is a room's, whatever the speech's loudness


def test_augmented_speech_keeps_its_word_times() -> None:
    """Every word moves by the lead-in, and the words after an inserted pause by the pause too."""
    speech = speak_timed(TEXT, "en-us", 160, 50)
    pauses = 0
    for seed in range(12):
        louder = augment(speech, np.random.default_rng(seed))
        shift = louder.word_starts[0][1] - speech.word_starts[0][1]
        assert shift >= 0
        moves = [t2 - t - shift for (_, t), (_, t2) in zip(speech.word_starts, louder.word_starts, strict=True)]
        assert [c for c, _ in speech.word_starts] == [c for c, _ in louder.word_starts]
        pause = max(moves)
        if pause > 1e-9:
            pauses += 1
            assert 0.3 <= pause <= 0.9
            first_after = next(i for i, move in enumerate(moves) if move > 1e-9)
            assert all(abs(move) < 1e-9 for move in moves[:first_after])
            assert all(abs(move - pause) < 1e-9 for move in moves[first_after:])
            gap_start = int((speech.word_starts[first_after][1] + shift) * SAMPLE_RATE)
            gap_end = gap_start + int(pause * SAMPLE_RATE)
            spoken_end = int((speech.ends[-1] + shift + pause) * SAMPLE_RATE)
            # The pause holds only the room's noise: quieter than the words that follow it.
            assert rms(louder.audio[gap_start:gap_end]) < 0.5 * rms(louder.audio[gap_end:spoken_end])
        lead = int(shift * SAMPLE_RATE)
        assert lead == 0 or rms(louder.audio[:lead]) < 0.5 * rms(louder.audio[lead:])
    assert 0 < pauses < 12  # a third of the commands pause


def test_the_pause_corpus_pauses_after_every_word_in_turn_on_held_out_speech_only() -> None:
    corpus = pause_corpus(24)
    demo_voices = {u.voice for u in corpus}
    assert demo_voices <= set(HELDOUT_VOICES)
    for item in corpus:
        assert f"{item.first} {item.second}" == item.text and item.first and item.second
        assert PAUSE_SECONDS[0] <= item.pause_seconds <= PAUSE_SECONDS[1]
        pause = item.audio[item.pause_start : item.pause_end]
        assert pause.shape[0] >= int(item.pause_seconds * SAMPLE_RATE)
        loud = float(np.abs(pause).max())
        # The room alone, or the room and a hesitation, between two parts of speech.
        assert (loud > 0.05) == bool(item.hesitation), (item.hesitation, loud)
        assert np.abs(item.audio[: item.pause_start]).max() > 0.1 and np.abs(item.audio[item.pause_end :]).max() > 0.1
    # Places in turn: the first command of the list is paused after its first word, then its second...
    places = {(item.text, len(item.first.split())) for item in corpus}
    assert len({count for _, count in places}) >= 3
    assert {item.hesitation for item in corpus} == {"", "uh", "um"}


def test_paused_training_speech_says_what_was_heard_before_the_pause() -> None:
    rng = np.random.default_rng(3)
    for _ in range(6):
        whole, stopped = paused_speech(TEXT, "en-us+m1", 170, 50, rng)
        assert whole.text == TEXT and TEXT.startswith(stopped.text + " ")
        assert stopped.audio.shape[0] >= SAMPLE_RATE * 0.3 and whole.audio.shape[0] > stopped.audio.shape[0]
        characters = [c for c, _ in whole.word_starts]
        assert characters == sorted(characters) and all(TEXT[c - 1] == " " for c in characters[1:])


needs_other_synthesizers = pytest.mark.skipif(
    shutil.which("flite") is None or shutil.which("festival") is None,
    reason="apt-get install flite festival festvox-kallpc16k festvox-kdlpc16k festvox-us-slt-hts",
)


@needs_other_synthesizers
@pytest.mark.parametrize("synthesizer", list(OTHER_VOICES))
def test_other_synthesizers_speak_every_voice_repeatably(synthesizer: str) -> None:
    """Speech unlike espeak-ng's, the same on every call, each voice its own."""
    spoken = [speak_with(synthesizer, "turn on the kitchen lights", voice) for voice in OTHER_VOICES[synthesizer]]
    for audio in spoken:
        assert 1.0 < audio.shape[0] / SAMPLE_RATE < 3.5 and float(np.abs(audio).max()) > 0.1
    assert np.array_equal(
        spoken[0], speak_with(synthesizer, "turn on the kitchen lights", OTHER_VOICES[synthesizer][0])
    )
    assert len({audio.shape[0] for audio in spoken}) == len(spoken)


@needs_other_synthesizers
def test_festival_training_speech_has_its_words_times() -> None:
    for voice in FESTIVAL_VOICES:
        speech = speak_timed(TEXT, voice, 165, 60)
        characters = [c for c, _ in speech.word_starts]
        assert [TEXT[c:].split()[0] for c in characters] == TEXT.split()
        starts = [t for _, t in speech.word_starts]
        assert starts == sorted(starts) and all(s < e for s, e in zip(starts, speech.ends, strict=True))
        assert speech.ends[-1] <= speech.audio.shape[0] / SAMPLE_RATE
        # The first word's span holds speech; the silence festival puts before it does not.
        first = speech.audio[int(starts[0] * SAMPLE_RATE) : int(speech.ends[0] * SAMPLE_RATE)]
        assert float(np.abs(first).max()) > 0.05 > float(np.abs(speech.audio[: int(0.05 * SAMPLE_RATE)]).max())
        prefix, heard = speech.cut_inside_word(np.random.default_rng(3))
        assert TEXT.startswith(heard) and prefix.shape[0] < speech.audio.shape[0]


def test_warped_training_speech_keeps_each_word_at_its_place_in_the_audio() -> None:
    """A word's time scales with the audio: a cut at a word's start hears the same speech before and after."""
    speech = speak_timed(TEXT, "en-us", 160, 50)
    for factor in (0.85, 1.15):
        faster = warped(speech, factor)
        assert abs(faster.audio.shape[0] - speech.audio.shape[0] / factor) <= 1
        for (c, t), (c2, t2) in zip(speech.word_starts, faster.word_starts, strict=True):
            assert c == c2 and abs(t2 - t / factor) < 1e-9
        # Louder and quieter parts stay where the times say: the energy before each word start is the same share.
        for (_, t), (_, t2) in zip(speech.word_starts, faster.word_starts, strict=True):
            share = energy(speech.audio[: int(t * SAMPLE_RATE)]) / energy(speech.audio)
            share2 = energy(faster.audio[: int(t2 * SAMPLE_RATE)]) / energy(faster.audio)
            assert abs(share - share2) < 0.02


def test_a_softer_last_word_is_softer_from_its_start_and_the_rest_is_untouched() -> None:
    speech = speak_timed(TEXT, "en-us", 160, 50)
    at = int(speech.word_starts[-1][1] * SAMPLE_RATE)
    softer = with_last_word_softer(speech, 20.0)
    assert np.array_equal(softer.audio[:at], speech.audio[:at])
    assert np.allclose(softer.audio[at:], speech.audio[at:] * 0.1, atol=1e-7)
    assert softer.word_starts == speech.word_starts


def energy(samples: np.ndarray) -> float:
    return float(np.sum(samples.astype(np.float64) ** 2))


def test_tilted_training_speech_keeps_its_loudness_and_times_and_moves_its_energy_between_low_and_high() -> None:
    speech = speak_timed(TEXT, "en-us", 160, 50)

    def high_share(audio: np.ndarray) -> float:  # of the energy, the share above 4 kHz
        power = np.abs(np.fft.rfft(audio)) ** 2
        return float(np.sum(power[power.shape[0] // 2 :]) / np.sum(power))

    for coefficient, brighter in ((0.7, True), (-0.8, False)):
        filtered = tilted(speech, coefficient)
        assert filtered.word_starts == speech.word_starts and filtered.audio.dtype == np.float32
        assert abs(energy(filtered.audio) / energy(speech.audio) - 1) < 1e-3
        assert (high_share(filtered.audio) > high_share(speech.audio)) == brighter


def test_the_soft_tail_corpus_draws_each_commands_pause_and_softness_from_the_ranges_asked() -> None:
    """Every command of the corpus, not the first alone (a drawn pause once replaced the range it came from)."""
    from tools.soft_tail import corpus

    unpaused = corpus(3, pause=(0.0, 0.0))
    assert len(unpaused) == 3 and all(item.pause_seconds == 0.0 for item in unpaused)
    paused = corpus(3)
    assert len(paused) == 3
    assert all(0.3 <= item.pause_seconds <= 0.8 and 20.0 <= item.softer_db <= 30.0 for item in paused)
