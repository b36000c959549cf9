"""Small pieces on their own: languages, local agreement, audio conversion."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from wyoming.audio import AudioChunk, AudioFormat

from wyoming_qwen3.backends.mlx.local_agreement import LocalAgreement
from wyoming_qwen3.model.format import Transcription, parse_output
from wyoming_qwen3.model.languages import LANGUAGE_NAMES, UnknownLanguageError, language_codes, resolve_language
from wyoming_qwen3.model.qwen import select_dtype
from wyoming_qwen3.server.stream.audio import AudioFormatError, AudioNormalizer

ALL = list(LANGUAGE_NAMES.values())


@pytest.mark.parametrize(
    ("requested", "expected"),
    [
        ("en", "English"),
        ("en-US", "English"),
        ("de_DE", "German"),
        ("German", "German"),
        ("yue", "Cantonese"),
        ("zh", "Chinese"),
        ("zh-CN", "Chinese"),
        ("zh-TW", "Chinese"),
        ("zh-HK", "Cantonese"),
        ("zh_MO", "Cantonese"),
        ("zh-Hant-HK", "Cantonese"),
        ("auto", None),
        (None, None),
        ("", None),
    ],
)
def test_languages_resolve(requested: str | None, expected: str | None) -> None:
    assert resolve_language(requested, ALL) == expected


def test_unsupported_language_is_refused() -> None:
    with pytest.raises(UnknownLanguageError, match="supports: auto, en"):
        resolve_language("fr", ["English"])
    with pytest.raises(UnknownLanguageError):
        resolve_language("xx", ALL)


@pytest.mark.parametrize(
    ("raw", "language", "text"),
    [
        ("language English<asr_text>turn on the lights", "English", "turn on the lights"),
        # No language heard (yet): the text after the tag still counts, as in qwen-asr.
        ("language None<asr_text>turn on the lights", "", "turn on the lights"),
        ("language None<asr_text>", "", ""),
        # Bytes that make no character (the demo model's int8 "关掉地下室���暖气") are not sent to the client.
        ("language Chinese<asr_text>关掉地下室\ufffd\ufffd\ufffd暖气", "Chinese", "关掉地下室暖气"),
    ],
)
def test_model_output_is_parsed(raw: str, language: str, text: str) -> None:
    assert parse_output(raw, None) == Transcription(language, text)


def test_incomplete_output_keeps_the_bytes_of_a_character_begun() -> None:
    """The streaming side waits on them (``complete_units``): the next token may complete the character."""
    assert parse_output("language Chinese<asr_text>打\ufffd", None, complete=False).text == "打\ufffd"
    assert parse_output("打\ufffd", "Chinese", complete=False).text == "打\ufffd"


def test_language_codes_round_trip() -> None:
    assert language_codes(ALL) == sorted(LANGUAGE_NAMES)


def test_local_agreement_commits_only_what_two_hypotheses_share() -> None:
    agreement = LocalAgreement()
    assert agreement.update(["turn"]) == []
    assert agreement.update(["turn", " of"]) == ["turn"]
    assert agreement.update(["turn", " on", " the"]) == []  # "of" was revised
    assert agreement.update(["turn", " on", " the", " light"]) == [" on", " the"]
    assert agreement.update(["turn", " on", " the", " light"]) == []  # the last unit may still grow
    assert agreement.flush(["Turn", " on", " the", " lights."]) == [" lights."]
    assert agreement.settled == ["turn", " on", " the"]


def test_local_agreement_after_a_cut_skips_the_rest_of_a_straddled_unit() -> None:
    agreement = LocalAgreement()
    agreement.restart([" w10"], straddled=" w9")
    assert agreement.update(["9", " w10", " w11"]) == []
    assert agreement.update(["9", " w10", " w11", " w12"]) == [" w11"]
    assert agreement.flush([" w10", " w11", " w12"]) == [" w12"]


def chunk(samples: np.ndarray, rate: int, width: int, channels: int) -> AudioChunk:
    return AudioChunk(rate=rate, width=width, channels=channels, audio=samples.tobytes())


def test_stereo_is_averaged_not_summed() -> None:
    loud = np.full(1600 * 2, 0x4000, dtype="<i2")  # both channels at half scale
    out = AudioNormalizer(AudioFormat(16000, 2, 2)).convert(chunk(loud, 16000, 2, 2))
    assert out.shape == (1600,)
    assert np.allclose(out, 0.5)


def test_eight_bit_unsigned_is_centred() -> None:
    silence = np.full(800, 128, dtype=np.uint8)
    out = AudioNormalizer(AudioFormat(8000, 1, 1)).convert(chunk(silence, 8000, 1, 1))
    assert out.shape[0] == pytest.approx(1600, abs=2)
    assert np.abs(out).max() < 0.01


def test_resampling_keeps_duration_across_chunks() -> None:
    normalizer = AudioNormalizer(AudioFormat(22050, 2, 1))
    tone = (np.sin(np.arange(22050) * 2 * np.pi * 440 / 22050) * 10000).astype("<i2")
    total = sum(normalizer.convert(chunk(part, 22050, 2, 1)).shape[0] for part in np.array_split(tone, 10))
    assert total == pytest.approx(16000, abs=10)


def test_partial_frames_and_format_changes_are_refused() -> None:
    normalizer = AudioNormalizer(AudioFormat(16000, 2, 2))
    with pytest.raises(AudioFormatError, match="whole number"):
        normalizer.convert(AudioChunk(16000, 2, 2, b"\x00" * 6))
    with pytest.raises(AudioFormatError, match="changed mid-stream"):
        normalizer.convert(AudioChunk(16000, 2, 1, b"\x00" * 8))
    with pytest.raises(AudioFormatError, match="unsupported sample rate"):
        AudioNormalizer(AudioFormat(10, 2, 1))


def test_dtype_falls_back_to_float16_where_cuda_lacks_bfloat16(monkeypatch) -> None:
    cuda, cpu = torch.device("cuda"), torch.device("cpu")
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: False)
    assert select_dtype(cuda) == torch.float16  # GTX 10xx/16xx, T4, P4
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: not including_emulation)
    assert select_dtype(cuda) == torch.bfloat16
    assert select_dtype(cpu) == torch.float32
    assert select_dtype(torch.device("mps")) == torch.float32
    assert select_dtype(cpu, "bfloat16") == torch.bfloat16


def test_each_backend_gets_the_repository_it_loads(tmp_path) -> None:
    from wyoming_qwen3.model.catalogue import resolve_model

    for folder in ("Qwen--Qwen3-ASR-0.6B-hf", "Qwen--Qwen3-ASR-0.6B"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "config.json").write_text('{"model_type": "qwen3_asr"}')
    torch_side = resolve_model("Qwen/Qwen3-ASR-0.6B", [tmp_path], tmp_path, "simulkv")
    mac_side = resolve_model("Qwen/Qwen3-ASR-0.6B", [tmp_path], tmp_path, "mlx")
    assert torch_side.path.name == "Qwen--Qwen3-ASR-0.6B-hf" and mac_side.path.name == "Qwen--Qwen3-ASR-0.6B"
    by_repo = resolve_model("qwen/qwen3-asr-0.6b-hf", [tmp_path], tmp_path, "simulkv")
    assert by_repo == torch_side and by_repo.name == "Qwen/Qwen3-ASR-0.6B"
