"""The simulkv backend: Qwen3-ASR with the AlignAtt SimulStreaming policy.

Each step (every ``step_seconds`` of new audio) decodes greedily from what is
already committed and emits tokens while the alignment heads show the model
reading audio well before the end of the buffer; a token that looks at the
last ``border_seconds``, or that the model is unsure of (``min_probability``),
waits for more audio. Emitted tokens are final.

The decoder sequence is ``prefix | audio | suffix | committed text | new``.
Its KV cache is kept across steps and cropped, not rebuilt: the prompt prefix
is computed once per session, and the audio tokens of encoder windows whose
features did not change keep their KV; only the audio tail, the prompt
suffix, the committed text and the new tokens are prefilled again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import torch
from transformers import DynamicCache

from .alignment import AlignmentHeads, AlignmentPolicy, AttentionRecorder, head_index, use_recording_attention
from .audio_cache import AudioWindowCache
from .backend import Backend, FinalText, SessionOptions, StreamingSession, TimedWord
from .qwen import ASR_TEXT_TAG, SAMPLE_RATE, SAMPLES_PER_FRAME, QwenAsrModel, parse_output, repeated_tail
from .text_units import SentText, begins_unit, normalize

_LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True)
class SimulKvSettings:
    """How sessions stream; the defaults are the server's."""

    policy: AlignmentPolicy = AlignmentPolicy()
    #: Steps run 10 ms past each multiple of this much audio (a slower machine takes
    #: longer steps: one runs on all the audio that came during the one before).
    step_seconds: float = 0.5
    #: Longest buffer; beyond it whole encoder windows are cut from the front, down to
    #: ``stream_keep_seconds``. A cut moves every audio position, so the rest is prefilled
    #: again: cutting much at once, rarely, keeps that cost small per audio second. With 2 s
    #: encoder windows, 6 s cut to 2 s made a 30 s stream cost what a 10 s one does per
    #: second (99 and 101 GFLOPs, 0.6B shape; a Home Assistant command is rarely cut at all).
    stream_window_seconds: float = 6.0
    stream_keep_seconds: float = 2.0
    #: Reuse the KV and encoder caches (off only for the benchmark's baseline).
    reuse: bool = True
    #: A detected language is committed once the buffer holds this much audio (the
    #: preamble ``language X<asr_text>`` is exempt from the border, so it would be on 0.5 s).
    language_seconds: float = 2.0
    #: Benchmarks only: decode as if the speech were this many tokens a second, ignoring the
    #: policy and end of sequence: a step writes the tokens of the audio before the border,
    #: the final pass the rest. Random weights then do the real model's work.
    scripted_tokens_per_second: float | None = None


@dataclass
class SessionStats:
    """What a session computed, for tests and the benchmark."""

    steps: int = 0
    #: Tokens (prompt prefix and audio) whose KV the last step kept.
    last_reused_tokens: int = 0
    #: Complete encoder windows the last step encoded again because their features changed.
    last_changed_windows: int = 0
    #: Prefilled so far: audio tokens, and text (the prompt around the audio, the answer fed back).
    audio_tokens_prefilled: int = 0
    text_tokens_prefilled: int = 0


def step_token_cap(new_seconds: float, in_preamble: bool) -> int:
    """Tokens a non-final step may write for ``new_seconds`` of new audio.

    Fast speech is about 5 tokens a second; 8 a second and 8 more leave room
    for text held back at the border in earlier steps, and 8 more for the
    language preamble.
    """
    return 8 + int(8 * new_seconds) + (8 if in_preamble else 0)


class SimulKvBackend(Backend):
    """Sessions over one loaded Qwen3-ASR model."""

    def __init__(
        self,
        model: QwenAsrModel,
        heads: AlignmentHeads | None = None,
        settings: SimulKvSettings | None = None,
    ) -> None:
        super().__init__("simulkv")
        self.model = model
        text_config = model.thinker.config.text_config
        self.heads = heads or AlignmentHeads.default(text_config.num_hidden_layers, text_config.num_attention_heads)
        self.settings = settings or SimulKvSettings()
        use_recording_attention(text_config)

    @property
    def supported_languages(self) -> list[str]:
        return self.model.supported_languages

    def create_session(self, options: SessionOptions) -> SimulKvSession:
        return SimulKvSession(self.model, self.heads, self.settings, options)


class SimulKvSession(StreamingSession):
    """One utterance: its audio buffer, caches and committed tokens."""

    def __init__(
        self, model: QwenAsrModel, heads: AlignmentHeads, settings: SimulKvSettings, options: SessionOptions
    ) -> None:
        self._model = model
        self._settings = settings
        self._options = options
        self._heads_by_layer = head_index(heads.by_layer, model.device)
        self._policy = settings.policy
        prompt = model.prompt_ids(options.context, options.language)
        self._prefix_len = len(prompt.prefix)
        self._prefix_embeds = model.embed_tokens(prompt.prefix)
        self._suffix_embeds = model.embed_tokens(prompt.suffix)
        self._buffer = np.zeros(0, dtype=np.float32)
        self._unheard = 0
        #: Samples of the utterance after which the next step runs (see _step_due).
        self._next_step_at = self._step_mark(0)
        #: Samples cut from the front of the buffer.
        self._cut_samples = 0
        self._audio_cache = AudioWindowCache(enabled=settings.reuse)
        self._cache = self._prefill_prefix()
        #: Audio tokens (after the prefix) whose KV in the cache is still valid.
        self._cached_audio_tokens = 0
        #: Every committed token, and the audio time (s) each one looked at.
        self._committed: list[int] = []
        self._times: list[float] = []
        #: Tokens fed back as the answer so far (committed, minus text of trimmed audio).
        self._context: list[int] = []
        self._sent = SentText()
        #: Audio time (s) the last committed text token looked at; None at first and after a
        #: rewind, as in the SimulStreaming reference (a stale one made every step rewind).
        self._last_text_time: float | None = None
        #: Set from the event loop's thread once the speaker has finished (see stop_early).
        self._finishing = False
        self.stats = SessionStats()

    @property
    def offset_seconds(self) -> float:
        """Seconds of audio cut from the front of the buffer."""
        return self._cut_samples / SAMPLE_RATE

    @property
    def buffer(self) -> np.ndarray:
        """The audio buffered now (after any trim)."""
        return self._buffer

    @property
    def prefix_tokens(self) -> int:
        """Tokens of the prompt before the audio, whose KV every step keeps."""
        return self._prefix_len

    @property
    def context_ids(self) -> list[int]:
        """The answer tokens fed back after the prompt suffix."""
        return list(self._context)

    # -- caches ---------------------------------------------------------------

    @torch.inference_mode()
    def _prefill_prefix(self) -> DynamicCache:
        """A cache holding the prompt prefix, computed once per session."""
        cache = DynamicCache()
        self._model.forward(self._prefix_embeds, 0, cache)
        return cache

    def _crop(self, audio_tokens: int) -> None:
        keep = min(audio_tokens, self._cached_audio_tokens)
        self._cache.crop(self._prefix_len + keep)
        self._cached_audio_tokens = keep

    # -- streaming ------------------------------------------------------------

    def _append(self, audio: np.ndarray) -> None:
        self._buffer = np.concatenate([self._buffer, audio.astype(np.float32, copy=False)])
        self._unheard += audio.shape[0]

    def stop_early(self) -> None:
        self._finishing = True

    def feed(self, audio: np.ndarray) -> str:
        self._append(audio)
        if self._finishing or not self._step_due():
            return ""  # finishing: the final pass hears this audio, with no step before it
        self._trim_if_needed()
        self._step(final=False)
        return self._sent.advance(self._text(final=False), final=False)

    def _heard_samples(self) -> int:
        """Samples of the utterance so far, cut or buffered."""
        return self._cut_samples + self._buffer.shape[0]

    def _step_mark(self, heard: int) -> int:
        """Where the first step after ``heard`` samples runs: one frame past the next multiple of the step.

        A window is complete once a frame follows it (audio_cache), so a step that ended
        exactly on a window's end would encode and prefill that window twice: 10 ms later,
        with steps a multiple or a divisor of the window, each window is encoded once, as it
        completes (at 2 s steps and windows the encoder's FLOPs fell from 16.1 to 9.2 per audio
        second, the offline pass's 8.9).
        """
        step = max(1, round(self._settings.step_seconds * SAMPLE_RATE))
        return (max(0, heard - SAMPLES_PER_FRAME) // step + 1) * step + SAMPLES_PER_FRAME

    def _step_due(self) -> bool:
        heard = self._heard_samples()
        if heard < self._next_step_at:
            return False
        self._next_step_at = self._step_mark(heard)
        return True

    def finish(self, audio: np.ndarray | None = None) -> FinalText:
        if audio is not None:
            self._append(audio)
            self._trim_if_needed()
        if self._buffer.shape[0] > 0:
            if self._settings.scripted_tokens_per_second is None:
                # (Random weights write no words, so the benchmarks' script would forget all.)
                self._forget_unsent_text()
            self._step(final=True)
        return FinalText(text=self._sent.advance(self._text(final=True), final=True), language=self.language)

    @dataclass
    class Prefill:
        """The state after prefilling one step: the logits of the next token and where to go on."""

        logits: torch.Tensor
        recorder: AttentionRecorder
        position: int
        audio_tokens: int

    @torch.inference_mode()
    def prefill(self) -> SimulKvSession.Prefill:
        """Bring the KV cache up to date with the buffer and the committed text.

        Only what changed is computed: the cache is cropped to the prompt
        prefix plus the audio tokens of unchanged leading windows, and the rest
        (audio tail, prompt suffix, committed text) is prefilled onto it.
        """
        model = self._model
        encoded = self._audio_cache.encode(model, model.log_mel(self._buffer))
        audio = encoded.embeddings.to(model.dtype)
        self._crop(encoded.stable_tokens)
        start = self._prefix_len + self._cached_audio_tokens
        parts = [audio[self._cached_audio_tokens :].unsqueeze(0), self._suffix_embeds]
        if self._context:
            parts.append(model.embed_tokens(self._context))
        if not self._settings.reuse:  # the benchmark's baseline recomputes everything
            parts.insert(0, self._prefix_embeds)
            self._cache.crop(0)
            start = 0
        recorder = AttentionRecorder(self._heads_by_layer)
        prefill = torch.cat(parts, dim=1)
        self.stats.last_reused_tokens = start
        self.stats.last_changed_windows = encoded.changed_windows
        new_audio_tokens = audio.shape[0] - self._cached_audio_tokens
        self.stats.audio_tokens_prefilled += new_audio_tokens
        self.stats.text_tokens_prefilled += prefill.shape[1] - new_audio_tokens
        logits = model.forward(prefill, start, self._cache, alignment_recorder=recorder)
        self._cached_audio_tokens = audio.shape[0]
        return SimulKvSession.Prefill(logits, recorder, start + prefill.shape[1], audio.shape[0])

    @torch.inference_mode()
    def _step(self, final: bool) -> None:
        new_seconds = self._unheard / SAMPLE_RATE
        self._unheard = 0
        self.stats.steps += 1
        model = self._model
        state = self.prefill()
        logits, recorder, position, audio_tokens = state.logits, state.recorder, state.position, state.audio_tokens
        audio_span = (self._prefix_len, self._prefix_len + audio_tokens)
        budget = self._token_budget()
        previous = self._last_attended_token()
        ids = model.token_ids
        in_preamble = not self._options.language and ids.asr_text not in self._committed
        new_tokens: list[int] = []
        new_times: list[float] = []
        scripted = self._settings.scripted_tokens_per_second
        if scripted is not None:
            limit = self._scripted_tokens(scripted, final)
        elif final:
            limit = budget
        else:
            # A non-final step writes what the new audio can hold, so a runaway step costs little.
            limit = min(budget, step_token_cap(new_seconds, in_preamble))
        for index in range(limit):
            if self._finishing and not final:
                break  # the speaker has finished: the final pass is what they wait for
            token = int(logits.argmax())
            attended = self._policy.attended_token(recorder.audio_attention(*audio_span))
            # The language preamble and special tokens do not track the audio: no policy applies.
            is_text = not in_preamble and token not in ids.special
            if scripted is None:
                if token in ids.eos:
                    break
                if not final and in_preamble and self._buffer.shape[0] < self._settings.language_seconds * SAMPLE_RATE:
                    break  # the language, once committed, holds for the utterance: decide it on enough audio
                if not final and is_text and self._policy.jumped_back(attended, previous):
                    _LOGGER.debug("Rewind: attention jumped from token %s to %s", previous, attended)
                    new_tokens, new_times = [], []
                    self._last_text_time = None
                    break
                if not final and is_text:
                    if self._policy.at_border(attended, audio_tokens) or self._policy.unsure(logits):
                        break
            new_tokens.append(token)
            new_times.append(self.offset_seconds + attended / self._policy.tokens_per_second)
            if is_text:
                previous = attended
                self._last_text_time = new_times[-1]
            in_preamble = in_preamble and token != ids.asr_text
            if index + 1 == limit:
                break  # no token follows: its forward would be computed for nothing
            recorder = AttentionRecorder(self._heads_by_layer)
            logits = model.forward(model.embed_tokens([token]), position, self._cache, alignment_recorder=recorder)
            position += 1
        if scripted is None:
            new_tokens, new_times = self._without_loop(new_tokens, new_times, final)
            if final and len(new_tokens) == limit:
                _LOGGER.warning("The final pass used its whole budget of %d tokens; the transcript may be cut", limit)
        self._committed += new_tokens
        self._context += new_tokens
        self._times += new_times

    def _without_loop(self, tokens: list[int], times: list[float], final: bool) -> tuple[list[int], list[float]]:
        """A step ending in a loop is discarded; the final pass keeps the loop's first copy only.

        Streamed text cannot be taken back, so a hallucinated loop ("the the the ...")
        must never be committed by a non-final step.
        """
        looping = min(repeated_tail(self._committed + tokens), len(tokens))
        if not looping:
            return tokens, times
        if not final:
            _LOGGER.debug("Discarded a step that repeats itself (%d tokens)", looping)
            return [], []
        _LOGGER.warning("The final pass repeats itself; %d repeated tokens dropped", looping)
        keep = max(0, len(tokens) - looping)
        return tokens[:keep], times[:keep]

    def _forget_unsent_text(self) -> None:
        """Drop the committed tokens past the text sent, so the final step decodes them again.

        Only sent text is final to the client. The tokens of a word begun but
        not sent were chosen on less audio; kept, one wrong early piece steers
        the rest ("si" at 1.5 s of "stop the music..." ended as "side room dim
        living living room" on the demo model), and decoding them again over
        the whole utterance costs a few tokens. Sent units stay committed, so
        the final step never decodes them again.
        """
        preamble = self._preamble_length()
        keep = next(
            (
                index
                for index in range(preamble, len(self._committed) + 1)
                if normalize(self._text(False, index)).startswith(self._sent.text)
            ),
            len(self._committed),
        )
        dropped = len(self._committed) - keep
        if dropped:
            del self._committed[keep:], self._times[keep:]
            del self._context[max(preamble, len(self._context) - dropped) :]

    def _scripted_tokens(self, tokens_per_second: float, final: bool) -> int:
        """Tokens the benchmarks' schedule writes now: those of the audio before the border, or all."""
        heard = self._heard_samples() / SAMPLE_RATE
        if not final:
            heard = max(0.0, heard - self._policy.border_seconds)
        return max(0, int(tokens_per_second * heard) - len(self._committed))

    def _token_budget(self) -> int:
        total = self._model.max_new_tokens(self._heard_samples() / SAMPLE_RATE)
        return max(0, total - len(self._committed))

    def _last_attended_token(self) -> int | None:
        if self._last_text_time is None:
            return None
        return round((self._last_text_time - self.offset_seconds) * self._policy.tokens_per_second)

    def _trim_if_needed(self) -> None:
        """Once the buffer is longer than the stream window, cut whole encoder windows from its front."""
        settings = self._settings
        if self._buffer.shape[0] <= settings.stream_window_seconds * SAMPLE_RATE:
            return
        window_samples = self._model.window_frames * SAMPLES_PER_FRAME
        windows = int(self._buffer.shape[0] - settings.stream_keep_seconds * SAMPLE_RATE) // window_samples
        if windows <= 0:
            return
        cut_frames = windows * self._model.window_frames
        self._audio_cache.drop_front(windows, float(self._model.log_mel(self._buffer)[:, :cut_frames].max()))
        self._buffer = self._buffer[windows * window_samples :]
        self._cut_samples += windows * window_samples
        # Every audio position moved: only the prompt prefix keeps its KV.
        self._cached_audio_tokens = 0
        self._cache.crop(self._prefix_len)
        # The answer fed back keeps its language preamble and the text whose audio remains.
        preamble = self._preamble_length()
        # A unit heard within the border before the cut stays too: attended times are the heads'
        # estimate, and a word whose end remains but whose text left would be written again.
        keep = self._first_unit_heard_after(self.offset_seconds - self._policy.border_seconds, preamble)
        self._context = self._committed[:preamble] + self._committed[keep:]
        _LOGGER.debug("Trimmed %s window(s); buffer starts at %.2f s", windows, self.offset_seconds)

    # -- text -----------------------------------------------------------------

    def _preamble_length(self) -> int:
        """Committed tokens before the transcript text (``language X<asr_text>``)."""
        if self._options.language:
            return 0
        tokenizer = self._model.tokenizer
        for index in range(len(self._committed)):
            if ASR_TEXT_TAG in tokenizer.decode(self._committed[: index + 1]):
                return index + 1
        return len(self._committed)

    def _text(self, final: bool, tokens: int | None = None) -> str:
        """The transcript text of the committed tokens (the first ``tokens`` of them)."""
        committed = self._committed if tokens is None else self._committed[:tokens]
        return parse_output(self._model.decode_text(committed), self._options.language, final).text

    @property
    def language(self) -> str:
        if self._options.language:
            return self._options.language
        return parse_output(self._model.decode_text(self._committed), None).language

    @property
    def word_times(self) -> list[TimedWord]:
        """Committed words with the audio times their tokens attended, monotonic."""
        tokenizer = self._model.tokenizer
        starts = self._word_starts(self._preamble_length())
        words: list[TimedWord] = []
        latest = 0.0
        for start, stop in zip(starts, [*starts[1:], len(self._committed)], strict=True):
            words.append(self._timed(tokenizer.decode(self._committed[start:stop]), self._times[start:stop], latest))
            latest = words[-1].end
        return [w for w in words if w.text]

    def _first_unit_heard_after(self, offset: float, preamble: int) -> int:
        """The first committed token of the earliest unit with a token attending at or after ``offset``.

        The context is cut at a unit boundary, and only before units whose audio
        is wholly gone: attended times are not monotonic, so a later unit may
        attend earlier than one before it, and a unit cut in two would be
        written again (doubled) or lost. Every unit from this one on is kept.
        """
        tokenizer = self._model.tokenizer
        start, before = preamble, ""
        for index in range(preamble, len(self._committed)):
            piece = tokenizer.decode([self._committed[index]])
            if index > preamble and begins_unit(before, piece):
                start = index
            before = piece or before
            if self._times[index] >= offset:
                return start
        return len(self._committed)

    def _word_starts(self, preamble: int) -> list[int]:
        """Indices of the committed tokens that begin a transcript word (after the preamble)."""
        tokenizer = self._model.tokenizer
        return [
            index
            for index in range(preamble, len(self._committed))
            if index == preamble or tokenizer.decode([self._committed[index]]).startswith(" ")
        ]

    @staticmethod
    def _timed(text: str, times: list[float], latest: float) -> TimedWord:
        start = max(times[0], latest)
        return TimedWord(text.strip(), start, max(start, times[-1]))
