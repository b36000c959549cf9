"""The simulkv processor on the tiny models: cache reuse is exact, the policy holds and flushes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import DynamicCache

from tools import offline
from tools.random_model import build_random_model
from wyoming_qwen3.backends.base import SessionOptions
from wyoming_qwen3.backends.inference import Preempted
from wyoming_qwen3.backends.simulkv import session as session_module
from wyoming_qwen3.backends.simulkv.alignatt import AttentionRecorder
from wyoming_qwen3.backends.simulkv.backend import SimulKvBackend
from wyoming_qwen3.backends.simulkv.session import SimulKvSession, step_token_cap
from wyoming_qwen3.backends.simulkv.settings import AlignmentHeads, AlignmentPolicy, SimulKvSettings
from wyoming_qwen3.model.format import AUDIO_TOKENS_PER_SECOND, SAMPLE_RATE, repeated_tail
from wyoming_qwen3.model.qwen import QwenAsrModel
from wyoming_qwen3.model.text_units import SentText, complete_units

from .conftest import SCRIPT_TEXT

HOLD_ALL = AlignmentPolicy(border_seconds=1e9)  # nothing is emitted before finish
EMIT_ALL = AlignmentPolicy(border_seconds=0.0, rewind_seconds=1e9)  # everything is emitted at once


@pytest.fixture(scope="module")
def tiny(tiny_model: Path) -> QwenAsrModel:
    return QwenAsrModel.load(tiny_model, "cpu")


@pytest.fixture(scope="module")
def scripted(scripted_model: Path) -> QwenAsrModel:
    return QwenAsrModel.load(scripted_model, "cpu")


def noise(seconds: float, seed: int = 0) -> np.ndarray:
    """Noise whose loudness and pitch change every 0.25 s, so that every window sounds different."""
    random = np.random.RandomState(seed)
    samples = int(seconds * SAMPLE_RATE)
    t = np.arange(samples) / SAMPLE_RATE
    pieces = random.uniform(0.02, 0.3, size=int(seconds * 4) + 1)[(t * 4).astype(int)]
    tone = np.sin(2 * np.pi * random.uniform(200, 3000, size=pieces.shape[0])[(t * 4).astype(int)] * t)
    return ((random.randn(samples) * 0.2 + tone) * pieces).astype(np.float32)


def session(model: QwenAsrModel, policy: AlignmentPolicy, language: str | None = "English", **kw) -> SimulKvSession:
    backend = SimulKvBackend(model, settings=SimulKvSettings(policy=policy, **kw))
    return backend.create_session(SessionOptions(language=language))


def full_recompute_logits(model: QwenAsrModel, s: SimulKvSession, language: str | None) -> torch.Tensor:
    """Logits of the next token from scratch: a fresh cache, the whole sequence at once."""
    prompt = model.prompt_ids("", language)
    parts = [model.embed_tokens(prompt.prefix), offline.audio_embeddings(model, s.buffer).unsqueeze(0)]
    parts.append(model.embed_tokens(prompt.suffix))
    if s.answer_ids:
        parts.append(model.embed_tokens(s.answer_ids))
    embeds = torch.cat(parts, dim=1)
    with torch.inference_mode():
        # transformers' own forward, not QwenAsrModel.forward, which projects only the last position.
        output = model.model(inputs_embeds=embeds, past_key_values=DynamicCache())
    return output.logits[0, -1]


def test_window_by_window_encoding_is_the_windowed_encoder(tiny: QwenAsrModel) -> None:
    """Encoding each window alone is what transformers' encoder computes over the whole utterance with its
    attention windows (cu_seqlens): a finished window never changes."""
    audio = noise(5.0)
    extracted = tiny.processor.feature_extractor(
        audio, sampling_rate=SAMPLE_RATE, padding=True, return_attention_mask=True, return_tensors="pt"
    )
    features, mask = extracted["input_features"], extracted["attention_mask"]
    with torch.inference_mode():
        whole = tiny.model.model.get_audio_features(features, mask).pooler_output
        # One window over everything: attention across the windows, for contrast.
        across = torch.tensor([0, whole.shape[0]], dtype=torch.int32)
        unwindowed = tiny.model.model.get_audio_features(features, mask, cu_seqlens=across).pooler_output
        windowed = offline.audio_embeddings(tiny, audio)
    assert windowed.shape == whole.shape == (65, 64)  # 5 s at 13 tokens/s
    scale = float(whole.abs().max())
    windowed_error = float((windowed - whole).abs().max())
    unwindowed_error = float((unwindowed - whole).abs().max())
    assert windowed_error < 1e-5 * scale
    # Attending across windows is a real difference, not rounding.
    assert unwindowed_error > 1e-3 * scale and unwindowed_error > 100 * windowed_error


def test_a_window_shorter_than_a_chunk_leaves_the_shared_encoder_as_it_was(tiny: QwenAsrModel) -> None:
    """A window under one 1 s chunk is convolved at its own length, by a view of the encoder: the tower every
    session shares keeps its own chunk length while the call runs, so another thread's encode is unchanged."""
    tower = tiny.model.model.audio_tower
    chunk_seen_by_shared_tower: list[int] = []
    hook = tower.conv2d1.register_forward_pre_hook(lambda *_: chunk_seen_by_shared_tower.append(tower.n_window))
    try:
        with torch.inference_mode():
            short = tiny.encode_window(tiny.log_mel(noise(0.33))[:, :33])
            longer = tiny.encode_window(tiny.log_mel(noise(1.5))[:, :150])
    finally:
        hook.remove()
    own_chunk = int(tiny.audio_config.n_window)
    assert chunk_seen_by_shared_tower == [own_chunk, own_chunk]
    assert short.shape[0] == 5 and longer.shape[0] == 13 + 7  # (33 frames -> 17 -> 9 -> 5); 1 s chunk + 50 frames


def test_the_prompt_prefix_is_computed_once_per_context_and_reused_exactly(tiny: QwenAsrModel) -> None:
    """A second session with the same context (another connection, the same home's names) starts from the first
    one's prefix keys and values, the very tensors, which equal a fresh computation bit for bit, as do the logits
    of its first step; another context is computed on its own."""
    names = ", ".join(f"name {i}" for i in range(200))
    backend = SimulKvBackend(tiny, settings=SimulKvSettings(policy=EMIT_ALL))
    options = SessionOptions(language="English", context=names)
    first, second = backend.create_session(options), backend.create_session(options)
    fresh = SimulKvSession(tiny, backend.heads, backend.settings, options)  # a prefix cache of its own

    def prefix_layers(s: SimulKvSession) -> list[tuple[torch.Tensor, torch.Tensor]]:
        return [(layer.keys, layer.values) for layer in s._cache.layers]

    assert all(a[0] is b[0] and a[1] is b[1] for a, b in zip(prefix_layers(first), prefix_layers(second), strict=True))
    for (keys, values), (fresh_keys, fresh_values) in zip(prefix_layers(second), prefix_layers(fresh), strict=True):
        assert keys is not fresh_keys and torch.equal(keys, fresh_keys) and torch.equal(values, fresh_values)
    assert second.prefix_tokens == fresh.prefix_tokens > 1000  # 200 names
    audio = noise(1.0, seed=3)
    for s in (first, second, fresh):
        s.feed(audio)
    assert torch.equal(second.prefill().logits, fresh.prefill().logits)
    assert torch.equal(first.prefill().logits, fresh.prefill().logits)  # second's steps left first's prefix as it was
    other = backend.create_session(SessionOptions(language="English", context="kitchen"))
    assert other.prefix_tokens < 50 and prefix_layers(other)[0][0] is not prefix_layers(first)[0][0]


def test_incremental_prefill_equals_full_recompute_across_window_boundaries(tiny: QwenAsrModel) -> None:
    s = session(tiny, EMIT_ALL)  # tokens are committed, so the committed text is part of the prefill
    audio = noise(5.0, seed=1)
    reused = []
    for end in np.arange(0.5, 5.01, 0.5):
        s.feed(audio[int((end - 0.5) * SAMPLE_RATE) : int(end * SAMPLE_RATE)])
        state = s.prefill()
        reused.append(s.reused_tokens)
        expected = full_recompute_logits(tiny, s, "English")
        assert torch.allclose(state.logits, expected, atol=1e-4), f"at {end} s"
    assert s.answer_ids, "the policy should have committed tokens"
    # After the 2 s and 4 s window boundaries the first windows' KV is reused, not recomputed.
    assert max(reused) >= len(tiny.prompt_ids("", "English").prefix) + 2 * 26


def test_a_shorter_encoder_window_streams_exactly_and_reuses_more(tiny: QwenAsrModel) -> None:
    one_second = QwenAsrModel(tiny.model, tiny.processor, tiny.device, window_seconds=1.0)
    assert one_second.window_frames == 100 and tiny.window_frames == 200
    s = session(one_second, EMIT_ALL)
    audio = noise(3.0, seed=5)
    prefix = len(tiny.prompt_ids("", "English").prefix)
    reused = []
    for end in np.arange(0.5, 3.01, 0.5):
        s.feed(audio[int((end - 0.5) * SAMPLE_RATE) : int(end * SAMPLE_RATE)])
        state = s.prefill()
        reused.append(s.reused_tokens - prefix)
        assert torch.allclose(state.logits, full_recompute_logits(one_second, s, "English"), atol=1e-4), end
    # Each completed second keeps its 13 audio tokens' KV (the 2 s windows would wait for 26).
    assert reused[2] == 13  # at 1.5 s
    held = session(one_second, HOLD_ALL)
    for start in range(0, audio.shape[0], SAMPLE_RATE // 2):
        held.feed(audio[start : start + SAMPLE_RATE // 2])
    # The offline pass uses the same window, so a held stream still ends as it does.
    assert held.finish().text == offline.transcribe(one_second, audio, language="English").text


@pytest.mark.parametrize("seconds", [0.0, 0.5, 1.5, 3.0])
def test_an_encoder_window_the_model_does_not_know_is_refused(tiny: QwenAsrModel, seconds: float) -> None:
    with pytest.raises(ValueError, match="multiple of 1 s up to 2 s"):
        QwenAsrModel(tiny.model, tiny.processor, tiny.device, window_seconds=seconds)


def test_incremental_prefill_equals_full_recompute_across_a_trim(tiny: QwenAsrModel) -> None:
    s = session(tiny, EMIT_ALL, stream_window_seconds=4.0, stream_keep_seconds=2.0)
    audio = noise(9.0, seed=2)
    for start in range(0, audio.shape[0], SAMPLE_RATE // 2):
        s.feed(audio[start : start + SAMPLE_RATE // 2])
    assert s.offset_seconds == pytest.approx(6.0)  # three 2 s windows cut from the front
    assert s.buffer.shape[0] / SAMPLE_RATE <= 4.0
    state = s.prefill()
    assert torch.allclose(state.logits, full_recompute_logits(tiny, s, "English"), atol=1e-4)


def test_stream_with_a_holding_border_ends_as_the_offline_transcription(tiny: QwenAsrModel) -> None:
    audio = noise(5.0, seed=3)
    s = session(tiny, HOLD_ALL)
    words = "".join(s.feed(audio[start : start + 8000]) for start in range(0, audio.shape[0], 8000)).split()
    assert words == []
    final = s.finish()
    assert final.text == offline.transcribe(tiny, audio, language="English").text
    assert s.steps == 10  # a step a half second, 10 ms past each mark (1.0 s to 5.0 s), and the final one


def test_border_zero_on_the_whole_audio_is_the_offline_transcription(tiny: QwenAsrModel) -> None:
    audio = noise(3.0, seed=4)
    s = session(tiny, AlignmentPolicy(border_seconds=0.0), step_seconds=0.5)
    assert s.feed(audio) + s.finish().text == offline.transcribe(tiny, audio, language="English").text


class PinnedAttention(AttentionRecorder):
    """Hand-made alignment: every head looks at one audio token (``-1``: the last)."""

    target = 0

    def audio_attention(self, start: int, stop: int) -> torch.Tensor:
        attention = torch.zeros(2, stop - start)
        attention[:, self.target] = 1.0
        return attention


def pin_attention(monkeypatch: pytest.MonkeyPatch, target: int) -> None:
    """Every alignment head attends to audio token ``target`` (negative: counted from the end)."""
    monkeypatch.setattr(session_module, "AttentionRecorder", PinnedAttention)
    monkeypatch.setattr(PinnedAttention, "target", target)


def test_a_token_looking_at_the_audio_end_is_held_back_and_flushed_by_finish(scripted, monkeypatch) -> None:
    pin_attention(monkeypatch, -1)
    s = session(scripted, AlignmentPolicy(border_seconds=0.5), language=None)
    audio = noise(4.0)
    assert "".join(s.feed(audio[start : start + 8000]) for start in range(0, audio.shape[0], 8000)).split() == []
    final = s.finish()
    assert final.text == SCRIPT_TEXT
    assert final.language == "English"


def test_a_token_looking_well_before_the_end_is_emitted_while_streaming(scripted, monkeypatch) -> None:
    pin_attention(monkeypatch, 0)
    s = session(scripted, AlignmentPolicy(border_seconds=0.5), language=None)
    audio = noise(2.0)
    streamed = "".join(s.feed(audio[start : start + 8000]) for start in range(0, audio.shape[0], 8000)).split()
    # Everything but the last word (which might still grow) is out before finish.
    assert streamed == SCRIPT_TEXT.split()[:-1]
    assert s.finish().text.split() == SCRIPT_TEXT.split()[-1:]


def test_a_token_the_model_is_unsure_of_is_held_back_and_flushed_by_finish(scripted, monkeypatch) -> None:
    pin_attention(monkeypatch, 0)  # well before the end: only the probability holds it
    # The scripted model gives each of its tokens a probability of 0.88.
    s = session(scripted, AlignmentPolicy(border_seconds=0.5, min_probability=0.95), language=None)
    audio = noise(2.0)
    assert "".join(s.feed(audio[start : start + 8000]) for start in range(0, audio.shape[0], 8000)).split() == []
    assert s.finish().text == SCRIPT_TEXT


def test_the_least_probability_compares_with_the_greedy_tokens_probability() -> None:
    logits = torch.tensor([2.0, 0.0, -1.0])  # softmax: 0.84, 0.11, 0.04
    assert AlignmentPolicy(min_probability=0.9).unsure(logits)
    assert not AlignmentPolicy(min_probability=0.8).unsure(logits)
    assert not AlignmentPolicy().unsure(torch.zeros(1000))  # off by default


def test_finish_decodes_a_word_begun_but_not_sent_again(scripted, monkeypatch) -> None:
    pin_attention(monkeypatch, 0)
    s = session(scripted, AlignmentPolicy(border_seconds=0.5), language="English")
    audio = noise(2.0)
    streamed = "".join(s.feed(audio[start : start + 8000]) for start in range(0, audio.shape[0], 8000)).split()
    assert streamed == SCRIPT_TEXT.split()[:-1]
    # The last word is committed but not sent. Make it a wrong guess, as a small model writes on
    # little audio: a word token the script never writes, after which the scripted model stops.
    tokenizer = scripted.tokenizer
    last = tokenizer(" " + SCRIPT_TEXT.split()[-1], add_special_tokens=False)["input_ids"]
    assert s._committed[-len(last) :] == last
    wrong = next(
        i
        for t, i in sorted(tokenizer.get_vocab().items())
        if t.startswith("Ġ") and t[1:].isalpha() and i not in s._committed
    )
    for tokens in (s._committed, s._answer):
        tokens[-len(last) :] = [wrong]
    del s._times[-len(last) + 1 :]
    assert s.finish().text.split() == SCRIPT_TEXT.split()[-1:]


def test_attention_jumping_back_discards_the_steps_tokens(scripted, monkeypatch) -> None:
    pin_attention(monkeypatch, 30)  # 2.3 s into the audio
    s = session(scripted, AlignmentPolicy(border_seconds=0.5, rewind_seconds=1.0), language=None)
    s.feed(noise(3.0))
    committed = list(s.answer_ids)
    assert committed
    pin_attention(monkeypatch, 0)  # jumps back 2.3 s > 1 s: rewind
    s.feed(noise(0.5, seed=9))
    assert s.answer_ids == committed


def test_alignment_heads_file_round_trip(tmp_path: Path) -> None:
    heads = AlignmentHeads(((1, 0), (1, 3), (0, 2)))
    path = tmp_path / "heads.json"
    heads.save(path)
    assert AlignmentHeads.load(path) == heads
    tuned = AlignmentHeads(((1, 0),), border_seconds=0.75, min_probability=0.9)
    tuned.save(path)
    assert AlignmentHeads.load(path) == tuned
    path.write_text('{"alignment_heads_compact": [[1, 0]], "min_probability": 2}')
    with pytest.raises(ValueError, match="min_probability"):
        AlignmentHeads.load(path)
    assert heads.by_layer == {1: [0, 3], 0: [2]}
    path.write_text('{"something": 1}')
    with pytest.raises(ValueError, match="alignment_heads_compact"):
        AlignmentHeads.load(path)
    assert AlignmentHeads.default(4, 2).heads == ((2, 0), (2, 1), (3, 0), (3, 1))


def test_names_and_terms_go_into_the_system_prompt_and_language_after_the_generation_prompt(tiny) -> None:
    prompt = tiny.prompt_ids("Ecobee, office lamp", "English")
    prefix = tiny.tokenizer.decode(prompt.prefix)
    suffix = tiny.tokenizer.decode(prompt.suffix)
    assert prefix == "<|im_start|>system\nEcobee, office lamp<|im_end|>\n<|im_start|>user\n<|audio_start|>"
    assert suffix == "<|audio_end|><|im_end|>\n<|im_start|>assistant\nlanguage English<asr_text>"
    assert tiny.tokenizer.decode(tiny.prompt_ids("", None).suffix).endswith("assistant\n")


@pytest.mark.parametrize(("language", "text"), [("Chinese", "打开客厅的灯"), ("Thai", "ปิดไฟ")])
def test_text_without_spaces_streams_whole_characters(language, text, tmp_path, monkeypatch) -> None:
    """Each character is a unit: sent while streaming, nothing inserted, finish decodes none again."""
    model = QwenAsrModel.load(build_random_model(tmp_path, "tiny", script=text), "cpu")
    pin_attention(monkeypatch, 0)  # well before the border: every token is committed
    s = session(model, AlignmentPolicy(border_seconds=0.5), language=language)
    audio = noise(2.0)
    deltas = [s.feed(audio[start : start + 8000]) for start in range(0, audio.shape[0], 8000)]
    streamed = "".join(deltas)
    assert streamed and " " not in streamed
    committed = list(s._committed)
    forwards = []
    original = model.forward
    monkeypatch.setattr(model, "forward", lambda *a, **k: forwards.append(1) or original(*a, **k))
    final = s.finish()
    assert streamed + final.text == text
    assert s._committed[: len(committed)] == committed
    # The final prefill, then only the unsent unit (one token a character here) is decoded again.
    assert len(forwards) == 1 + len(final.text)
    if language == "Thai":
        assert streamed == text[:-1] and final.text == text[-1:]  # a Thai letter at the end may take a mark
    else:
        assert streamed == text and final.text == ""


def test_complete_units() -> None:
    assert complete_units("turn on the", final=False) == "turn on"
    assert complete_units("turn  on\nthe ", final=True) == "turn on the"
    assert complete_units("打开客", final=False) == "打开客"
    assert complete_units("打开 TV", final=False) == "打开"
    assert complete_units("打\ufffd", final=False) == "打"  # an incomplete UTF-8 tail waits
    assert complete_units("ปิดไ", final=False) == "ปิด"  # "ไ" may still take a mark
    assert complete_units("ปิ", final=False) == ""


def test_sent_text_gives_append_only_deltas() -> None:
    sent = SentText()
    assert sent.advance("打开", final=False) == "打开"
    assert sent.advance("打开客厅", final=False) == "客厅"
    assert sent.advance("打开客厅 the", final=False) == ""
    assert sent.advance("打开客厅 the lights", final=True) == " the lights"
    assert sent.text == "打开客厅 the lights"


class SequencedAttention(AttentionRecorder):
    """Hand-made alignment: the n-th token attempted looks at ``targets[n]`` (the last one after that)."""

    targets: list[int] = [0]
    calls = 0

    def audio_attention(self, start: int, stop: int) -> torch.Tensor:
        cls = type(self)
        target = cls.targets[min(cls.calls, len(cls.targets) - 1)]
        cls.calls += 1
        attention = torch.zeros(2, stop - start)
        attention[:, target] = 1.0
        return attention


def sequenced(monkeypatch, targets: list[int]) -> None:
    monkeypatch.setattr(session_module, "AttentionRecorder", SequencedAttention)
    monkeypatch.setattr(SequencedAttention, "targets", targets)
    monkeypatch.setattr(SequencedAttention, "calls", 0)


def test_a_rewind_resets_the_last_attended_position(scripted, monkeypatch) -> None:
    s = session(scripted, AlignmentPolicy(border_seconds=0.5, rewind_seconds=1.0), language="English")
    sequenced(monkeypatch, [30, 30, 38])  # 3 s = 39 audio tokens: the third token is at the border
    text = s.feed(noise(3.0))
    committed = list(s.answer_ids)
    assert len(committed) == 2
    sequenced(monkeypatch, [0])  # 30 -> 0 tokens: back 2.3 s, more than 1 s: rewind
    text += s.feed(noise(0.5, seed=9))
    assert s.answer_ids == committed
    # The next step starts afresh: a stale 2.3 s would make every step rewind from here on.
    text += s.feed(noise(0.5, seed=10))
    assert len(s.answer_ids) > len(committed)
    assert text + s.finish().text == SCRIPT_TEXT


def test_the_language_preamble_is_exempt_from_border_and_rewind(scripted, monkeypatch) -> None:
    preamble = len(scripted.tokenizer("language English<asr_text>", add_special_tokens=False)["input_ids"])
    # The preamble looks at 2.3 s, at the border of 2.5 s of audio; the text at the start.
    sequenced(monkeypatch, [30] * preamble + [0] * 100)
    s = session(scripted, AlignmentPolicy(border_seconds=0.5), language=None)
    streamed = s.feed(noise(2.5))
    assert streamed == " ".join(SCRIPT_TEXT.split()[:-1])
    assert s.finish().text == " " + SCRIPT_TEXT.split()[-1]
    assert s.language == "English"


def test_a_detected_language_waits_for_two_seconds_of_audio(scripted, monkeypatch) -> None:
    pin_attention(monkeypatch, 0)
    s = session(scripted, AlignmentPolicy(border_seconds=0.5), language=None)
    audio = noise(3.0)
    for start in range(0, 3 * 8000, 8000):  # 1.5 s
        assert s.feed(audio[start : start + 8000]) == ""
    assert s.answer_ids == []  # not even the language is committed yet
    streamed = "".join(s.feed(audio[start : start + 8000]) for start in range(3 * 8000, audio.shape[0], 8000))
    assert streamed == " ".join(SCRIPT_TEXT.split()[:-1])
    assert s.language == "English"


def test_repeated_tails_are_loops_and_short_repeats_are_speech() -> None:
    assert repeated_tail([1, 2, 3, 4]) == 0
    assert repeated_tail([9, 5, 5, 5]) == 0  # "no no no"
    assert repeated_tail([9, 5, 5, 5, 5, 5, 5]) == 5
    assert repeated_tail([9, 1, 2, 1, 2]) == 0
    assert repeated_tail([9, 1, 2, 1, 2, 1, 2]) == 4
    assert repeated_tail([1, 2, 3, 1, 2, 3, 1, 2, 3, 7]) == 0


def forced_decoding(monkeypatch, model: QwenAsrModel, tokens: list[int]) -> None:
    """The model writes ``tokens`` (then the last one forever), whatever it hears; caches stay real."""
    original = model.forward
    written = iter(tokens)
    last = [tokens[-1]]

    def forward(*args, **kwargs) -> torch.Tensor:
        logits = torch.full_like(original(*args, **kwargs), -10.0)
        last[0] = next(written, last[0])
        logits[last[0]] = 10.0
        return logits

    monkeypatch.setattr(model, "forward", forward)


def test_a_step_that_loops_is_discarded(scripted, monkeypatch) -> None:
    pin_attention(monkeypatch, 0)
    the, on = (scripted.tokenizer(w, add_special_tokens=False)["input_ids"][0] for w in (" the", " on"))
    forced_decoding(monkeypatch, scripted, [the, on] * 40)
    s = session(scripted, AlignmentPolicy(border_seconds=0.5), language="English")
    assert s.feed(noise(1.0)) == ""
    assert s.answer_ids == []  # nothing of the loop is committed, so nothing can be streamed


def test_a_non_final_step_writes_only_what_its_new_audio_can_hold(scripted, monkeypatch) -> None:
    pin_attention(monkeypatch, 0)
    words = [i for t, i in sorted(scripted.tokenizer.get_vocab().items()) if t.startswith("Ġ") and t[1:].isalpha()]
    forced_decoding(monkeypatch, scripted, words[:60])  # never an end: a runaway step
    s = session(scripted, AlignmentPolicy(border_seconds=0.5), language="English")
    s.feed(noise(1.0))
    assert len(s.answer_ids) == step_token_cap(1.0, in_preamble=False) == 16


def test_the_answer_is_cut_before_whole_units_only(tiny) -> None:
    s = session(tiny, EMIT_ALL)
    ids = tiny.tokenizer(" turn on the kitchen lights", add_special_tokens=False)["input_ids"]
    pieces = [tiny.tokenizer.decode([i]) for i in ids]
    starts = [i for i, piece in enumerate(pieces) if piece.startswith(" ")]
    assert len(starts) >= 4
    s._committed = list(ids)
    # Times that are not monotonic: the second unit's last token attends before the cut at 2.0 s,
    # the third unit's first token after it but its second before it.
    times = [0.5] * len(ids)
    for index in range(starts[2], len(ids)):
        times[index] = 3.0
    if starts[3] - starts[2] > 1:
        times[starts[2] + 1] = 1.0
    s._times = times
    assert s._first_unit_attending_from(2.0, 0) == starts[2]  # the whole third unit stays, nothing split
    assert s._first_unit_attending_from(0.0, 0) == 0
    assert s._first_unit_attending_from(9.0, 0) == len(ids)


@dataclass(frozen=True)
class PacedPolicy(AlignmentPolicy):
    """A speaker at ``tokens_per_second_spoken``: the k-th text token attends at (k + 1) / rate s of the utterance.

    The decisions of a step are counted (the policy reads the attention once per token
    decided), so each token's attended time is where a real model would look for it.
    """

    pace: dict = field(default_factory=dict)
    tokens_per_second_spoken: float = 2.0

    def attended_token(self, attention: torch.Tensor) -> int:
        s = self.pace["session"]
        if self.pace.get("step") != s.steps:
            self.pace.update(step=s.steps, decided=0)
        index = len(s._committed) + self.pace["decided"]
        self.pace["decided"] += 1
        heard_at = (index + 1) / self.tokens_per_second_spoken
        return round((heard_at - s.offset_seconds) * AUDIO_TOKENS_PER_SECOND)


SLIDING_SCRIPT = "door set office room to twenty degrees lock front stop music turn lights"  # no token twice


def test_a_sliding_stream_window_loses_and_doubles_no_word(tmp_path) -> None:
    model = QwenAsrModel.load(build_random_model(tmp_path, "tiny", script=SLIDING_SCRIPT), "cpu")
    tokens = len(model.tokenizer(" " + SLIDING_SCRIPT, add_special_tokens=False)["input_ids"])
    policy = PacedPolicy(border_seconds=0.5, rewind_seconds=1e9)
    # Encoder windows are 2 s: past 4 s of buffer, whole windows are cut down to 2 s.
    s = session(model, policy, language="English", stream_window_seconds=4.0, stream_keep_seconds=2.0)
    policy.pace["session"] = s
    audio = noise(tokens / policy.tokens_per_second_spoken + 1.0, seed=11)
    streamed, offsets = "", set()
    for start in range(0, audio.shape[0], 8000):
        streamed += s.feed(audio[start : start + 8000])
        offsets.add(s.offset_seconds)
        # The answer fed back is whole words at the end of the committed text, and holds every
        # word whose tokens attend to audio still in the buffer.
        committed = model.decode_text(s._committed)
        context = model.decode_text(s.answer_ids)
        assert committed.endswith(context) and (context in ("", committed) or context.startswith(" "))
        heard = [t for t, time in zip(s._committed, s._times, strict=True) if time >= s.offset_seconds]
        assert model.decode_text(heard).strip() in context
        if s.answer_ids:  # ... and no word whose audio is gone by more than the border
            first = len(s._committed) - len(s.answer_ids)
            pieces = [model.decode_text([t]) for t in s._committed[first:]]
            length = next((i for i in range(1, len(pieces)) if pieces[i].startswith(" ")), len(pieces))
            assert max(s._times[first : first + length]) >= s.offset_seconds - policy.border_seconds
    final = s.finish()
    assert len(offsets) >= 4  # cut three times or more
    assert streamed and final.text  # text came while streaming, and at the end
    assert streamed + final.text == SLIDING_SCRIPT  # deltas: nothing lost, nothing doubled


def test_once_the_speaker_has_finished_a_step_ends_at_its_next_token_and_no_step_follows(scripted, monkeypatch) -> None:
    pin_attention(monkeypatch, 0)  # every token may be committed at once
    s = session(scripted, AlignmentPolicy(border_seconds=0.5), language="English")
    original = scripted.forward

    def forward_then_stop(embeds, *args, **kwargs):
        if embeds.shape[1] == 1:  # the first token decoded: audio-stop arrives meanwhile
            s.stop_early()
        return original(embeds, *args, **kwargs)

    monkeypatch.setattr(scripted, "forward", forward_then_stop)
    s.feed(noise(1.0))
    assert s.steps == 1 and len(s.answer_ids) == 1  # the token decided before, and no more
    s.feed(noise(1.0, seed=1))
    assert s.steps == 1  # the audio waits for the final pass
    assert s.finish().text == SCRIPT_TEXT
    assert s.steps == 2


def stream_beside(
    model: QwenAsrModel, pauses: tuple[int, ...], in_pause: Callable[[SimulKvSession, int, str], None]
) -> tuple[SimulKvSession, SimulKvSession]:
    """Two sessions fed the same 6 s in 0.25 s chunks; at the samples in ``pauses`` the second also runs
    ``in_pause`` (given the session, the sample and the text it sent): both must have sent the same deltas."""
    audio = noise(6.0, seed=4)
    plain, speculating = session(model, EMIT_ALL), session(model, EMIT_ALL)
    streamed: dict[str, list[str]] = {"plain": [], "speculating": []}
    for start in range(0, audio.shape[0], 4000):
        chunk = audio[start : start + 4000]
        streamed["plain"].append(plain.feed(chunk))
        streamed["speculating"].append(speculating.feed(chunk))
        if start in pauses:
            in_pause(speculating, start, "".join(streamed["speculating"]))
    assert streamed["plain"] == streamed["speculating"]
    return plain, speculating


def test_a_speculation_leaves_the_session_as_it_was(tiny: QwenAsrModel) -> None:
    """The early final pass is thrown away when speech resumes: streaming then goes on as if it had not run."""

    def speculate(speculating: SimulKvSession, start: int, sent: str) -> None:
        speculation = speculating.speculate(noise(0.3, seed=start))
        assert speculation is not None and speculation.text.startswith(sent)
        assert speculation.end_probability is None or 0 <= speculation.end_probability <= 1

    # A pause heard three times, each with some audio not yet stepped.
    plain, speculating = stream_beside(tiny, (12000, 36000, 60000), speculate)
    assert plain.answer_ids == speculating.answer_ids and plain.answer_ids  # committed text, and the same
    assert plain.steps == speculating.steps  # the speculations' passes are not counted as steps
    assert torch.equal(plain.prefill().logits, speculating.prefill().logits)  # the cache holds what it held
    assert plain.finish() == speculating.finish()


def test_a_speculation_is_the_final_pass_on_the_same_audio(tiny: QwenAsrModel) -> None:
    s = session(tiny, AlignmentPolicy(border_seconds=0.5), language=None)
    audio = noise(3.0, seed=6)
    sent = "".join(s.feed(audio[start : start + 8000]) for start in range(0, audio.shape[0], 8000))
    speculation = s.speculate()
    final = s.finish()
    assert speculation.text == sent + final.text and speculation.language == final.language


class FailingLayer:
    """Makes one decoder layer raise (as out of memory would) on its ``nth`` call once armed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, layer: torch.nn.Module, nth: int) -> None:
        self.calls, self.nth, self.armed, self.raised = 0, nth, False, 0
        forward = layer.forward

        def failing(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
            if self.armed:
                self.calls += 1
                if self.calls == self.nth:
                    self.raised += 1
                    raise torch.OutOfMemoryError("injected: out of memory in a middle decoder layer")
            return forward(*args, **kwargs)

        monkeypatch.setattr(layer, "forward", failing)


@pytest.mark.parametrize("nth", [1, 3], ids=["in the prefill", "while decoding"])
def test_an_early_final_pass_that_fails_in_a_middle_layer_leaves_the_session_as_it_was(tiny, monkeypatch, nth) -> None:
    """The layers before the failing one have cached the pass's new positions, the later ones have not: the
    session must still stream and finish exactly as one that never tried."""
    layers = tiny.decoder.layers
    failing = FailingLayer(monkeypatch, layers[len(layers) // 2], nth)
    assert 0 < len(layers) // 2 < len(layers) - 1 or len(layers) == 2

    def failing_speculation(speculating: SimulKvSession, start: int, sent: str) -> None:
        failing.armed, failing.calls = True, 0
        with pytest.raises(torch.OutOfMemoryError):
            speculating.speculate(noise(0.3, seed=start))
        failing.armed = False

    plain, speculating = stream_beside(tiny, (12000, 36000), failing_speculation)  # a pause, then speech resumes
    assert failing.raised == 2
    lengths = {layer.get_seq_length() for layer in speculating._cache.layers}
    assert len(lengths) == 1, f"the layers' caches differ in length: {lengths}"
    assert torch.equal(plain.prefill().logits, speculating.prefill().logits)
    failing.armed, failing.calls = True, 0  # and once more at the end: the final pass at audio-stop runs after it
    with pytest.raises(torch.OutOfMemoryError):
        speculating.speculate()
    failing.armed = False
    assert plain.finish() == speculating.finish()


def test_an_early_final_pass_that_gives_way_leaves_the_session_as_it_was_and_reruns_the_same(tiny) -> None:
    """Asked to yield after its second token (another stream's step came), the early pass stops there; run again,
    it gives what it would have, and the session streams and finishes as one that never tried."""
    asked: list[bool] = []

    def yield_on_second_token() -> bool:
        asked.append(True)
        return len(asked) == 3  # once before the prefill, then before each token

    def preempted_speculation(speculating: SimulKvSession, start: int, sent: str) -> None:
        extra = noise(0.3, seed=start)
        undisturbed = speculating.speculate(extra)
        asked.clear()
        speculating._should_yield = yield_on_second_token
        with pytest.raises(Preempted):
            speculating.speculate(extra)
        speculating._should_yield = lambda: False
        assert len(asked) == 3
        assert speculating.speculate(extra) == undisturbed

    plain, speculating = stream_beside(tiny, (12000, 36000), preempted_speculation)
    assert torch.equal(plain.prefill().logits, speculating.prefill().logits)
    assert plain.finish() == speculating.finish()
