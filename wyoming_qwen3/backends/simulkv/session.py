"""One simulkv utterance: Qwen3-ASR decoded with the AlignAtt SimulStreaming policy.

Each step (every ``step_seconds`` of new audio) decodes greedily from what is
already committed and emits tokens while the alignment heads show the model
reading audio well before the end of the buffer; a token that looks at the
last ``border_seconds``, or that the model is unsure of (``min_probability``),
waits for more audio. Emitted tokens are final.

A step is written as a generator (``Stepwise``) that yields each token's
decoder pass (``batch.TokenPass``) rather than running it, so that the
inference thread can run the token passes of several streams as one batch;
``feed`` and ``finish`` run the same generators alone.

The decoder sequence is ``prefix | audio | suffix | answer so far | new``.
Its KV cache is kept across steps and cropped, not rebuilt: the prompt prefix
is computed once per context and shared by the backend's sessions
(``kv_cache``), and the audio tokens of encoder windows whose
features did not change keep their KV; only the audio tail, the prompt
suffix, the answer fed back and the new tokens are prefilled again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

import numpy as np
import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer

from ...model.format import (
    ASR_TEXT_TAG,
    AUDIO_TOKENS_PER_SECOND,
    MAX_TOKENS_PER_SECOND,
    SAMPLE_RATE,
    SAMPLES_PER_FRAME,
    max_new_tokens,
    parse_output,
    repeated_tail,
)
from ...model.qwen import QwenAsrModel
from ...model.text_units import SentText, begins_unit, normalize
from ..base import FinalDelta, SessionOptions, Speculation, StreamingSession
from ..inference import Preempted, Stepwise, run_alone
from .alignatt import AttentionRecorder, head_index
from .batch import TokenPass, forward_tokens
from .encoder_cache import AudioWindowCache, SavedWindows
from .kv_cache import PrefixCache
from .settings import AlignmentHeads, SimulKvSettings

_LOGGER = logging.getLogger(__name__)


class Verdict(Enum):
    """What a step does with the token the model chose."""

    EMIT = "emit"
    #: Wait for more audio: the step ends, its tokens so far stay.
    HOLD = "hold"
    #: The model lost its place: the step's tokens are discarded.
    REWIND = "rewind"
    #: End of sequence.
    END = "end"


def step_token_cap(new_seconds: float, in_preamble: bool) -> int:
    """Tokens a non-final step may write for ``new_seconds`` of new audio.

    8 and 8 a second leave room for text held back at the border in earlier
    steps, and 8 more for the language preamble.
    """
    return 8 + int(MAX_TOKENS_PER_SECOND * new_seconds) + (8 if in_preamble else 0)


@dataclass(frozen=True)
class SavedState:
    """What a speculation may change, as it was before it (see ``speculate``)."""

    buffer: np.ndarray
    unstepped: int
    cached_audio_tokens: int
    committed: list[int]
    times: list[float]
    answer: list[int]
    sent: str
    last_text_time: float | None
    steps: int
    reused_tokens: int
    windows: SavedWindows


@dataclass
class Prefill:
    """The state after prefilling one step: the logits of the next token and where to go on."""

    logits: torch.Tensor
    recorder: AttentionRecorder
    position: int
    audio_tokens: int


class SimulKvSession(StreamingSession):
    """One utterance: its audio buffer, caches and committed tokens."""

    def __init__(
        self,
        model: QwenAsrModel,
        heads: AlignmentHeads,
        settings: SimulKvSettings,
        options: SessionOptions,
        should_yield: Callable[[], bool] = lambda: False,
        prefixes: PrefixCache | None = None,
    ) -> None:
        self._model = model
        #: The prompt prefixes every session of the backend shares (a cache of its own where none is given).
        self._prefixes = prefixes or PrefixCache(contexts=1)
        #: Asked between the tokens of an early final pass (``InferenceExecutor.should_yield``).
        self._should_yield = should_yield
        self._speculating = False
        self._settings = settings
        self._options = options
        self._heads_by_layer = head_index(heads.by_layer, model.device)
        self._policy = settings.policy
        prompt = model.prompt_ids(options.context, options.language)
        self._prefix = prompt.prefix
        self._prefix_len = len(prompt.prefix)
        self._suffix_embeds = model.embed_tokens(prompt.suffix)
        self._buffer = np.zeros(0, dtype=np.float32)
        #: Samples added since the last step.
        self._unstepped = 0
        #: Samples of the utterance after which the next step runs (see _step_due).
        self._next_step_at = self._step_mark(0)
        #: Samples cut from the front of the buffer.
        self._cut_samples = 0
        self._audio_cache = AudioWindowCache()
        self._cache = self._prefill_prefix()
        #: Audio tokens (after the prefix) whose KV in the cache is still valid.
        self._cached_audio_tokens = 0
        #: Every committed token, and the audio time (s) each one looked at.
        self._committed: list[int] = []
        self._times: list[float] = []
        #: The answer fed back after the prompt suffix: committed tokens, minus the text of cut audio.
        self._answer: list[int] = []
        self._sent = SentText()
        #: Audio time (s) the last committed text token looked at; None at first and after a
        #: rewind, as in the SimulStreaming reference (a stale one made every step rewind).
        self._last_text_time: float | None = None
        #: Set from the event loop's thread once the speaker has finished (see stop_early).
        self._finishing = False
        #: The probability of the end of text where the last final pass ended (None: it ended otherwise).
        self._end_probability: float | None = None
        #: Steps run, and the tokens (prompt prefix and audio) whose KV the last prefill kept: what a
        #: speculation that ran a step crops the cache back to (``_restore``).
        self.steps = 0
        self.reused_tokens = 0

    @property
    def offset_seconds(self) -> float:
        """Seconds of audio cut from the front of the buffer."""
        return self._cut_samples / SAMPLE_RATE

    @property
    def buffer(self) -> np.ndarray:
        """The audio buffered now (after any cut)."""
        return self._buffer

    @property
    def prefix_tokens(self) -> int:
        """Tokens of the prompt before the audio, whose KV every step keeps."""
        return self._prefix_len

    @property
    def answer_ids(self) -> list[int]:
        """The answer tokens fed back after the prompt suffix."""
        return list(self._answer)

    # -- caches ---------------------------------------------------------------

    def _prefill_prefix(self) -> DynamicCache:
        """A cache holding the prompt prefix, computed once per context (``kv_cache``)."""
        return self._prefixes.cache_for(self._model, self._prefix)

    def _crop(self, audio_tokens: int) -> None:
        """Keep the KV of the prompt prefix and of the first ``audio_tokens`` audio tokens (at most what is cached).

        Each layer is cropped to that length by its own count (crop() to a length is deprecated in
        transformers 5): a forward that failed part-way (out of memory in a middle layer) leaves the
        layers at different lengths, and one count for all cut the later layers short.
        """
        keep = min(audio_tokens, self._cached_audio_tokens)
        length = self._prefix_len + keep
        layers: list[DynamicLayer] = self._cache.layers  # type: ignore[assignment]  # Qwen3's: full attention
        for layer in layers:
            excess = layer.get_seq_length() - length
            if excess > 0:
                layer.crop(-excess)
        self._cached_audio_tokens = keep

    # -- streaming ------------------------------------------------------------

    def _append(self, audio: np.ndarray) -> None:
        self._buffer = np.concatenate([self._buffer, audio.astype(np.float32, copy=False)])
        self._unstepped += audio.shape[0]

    def stop_early(self) -> None:
        self._finishing = True

    def feed(self, audio: np.ndarray) -> str:
        return run_alone(self.feed_stepwise(audio), self._run_pass)

    def feed_stepwise(self, audio: np.ndarray) -> Stepwise[str]:
        self._append(audio)
        if self._finishing or not self._step_due():
            return ""  # finishing: the final pass hears this audio, with no step before it
        self._cut_if_needed()
        yield from self._step(final=False)
        return self._sent.advance(self._text(final=False), final=False)

    def _run_pass(self, token_pass: TokenPass) -> torch.Tensor:
        """One token pass of this session alone."""
        return forward_tokens(self._model, [token_pass])[0]

    def _utterance_samples(self) -> int:
        """Samples of the utterance so far, cut or buffered."""
        return self._cut_samples + self._buffer.shape[0]

    def _step_mark(self, samples: int) -> int:
        """Where the first step after ``samples`` runs: one frame past the next multiple of the step.

        A window is complete once a frame follows it (encoder_cache), so a step that ended
        exactly on a window's end would encode and prefill that window twice: 10 ms later,
        with steps a multiple or a divisor of the window, each window is encoded once, as it
        completes (at 2 s steps and windows the encoder's FLOPs fell from 16.1 to 9.2 per audio
        second, the offline pass's 8.9).
        """
        step = max(1, round(self._settings.step_seconds * SAMPLE_RATE))
        return (max(0, samples - SAMPLES_PER_FRAME) // step + 1) * step + SAMPLES_PER_FRAME

    def _step_due(self) -> bool:
        samples = self._utterance_samples()
        if samples < self._next_step_at:
            return False
        self._next_step_at = self._step_mark(samples)
        return True

    def finish(self, audio: np.ndarray | None = None) -> FinalDelta:
        return run_alone(self.finish_stepwise(audio), self._run_pass)

    def finish_stepwise(self, audio: np.ndarray | None = None) -> Stepwise[FinalDelta]:
        if audio is not None:
            self._append(audio)
            self._cut_if_needed()
        text = yield from self._final_pass()
        return FinalDelta(text=text, language=self.language)

    def speculate(self, audio: np.ndarray | None = None) -> Speculation:
        if self._should_yield():
            raise Preempted  # cancelled while queued behind a running call, or more urgent work came
        saved = self._save()
        self._speculating = True
        try:
            if audio is not None:
                self._append(audio)  # not cut: the audio KV of the cache must stay as it is
            run_alone(self._final_pass(), self._run_pass)  # alone: it yields to any other work
            return Speculation(self._sent.text, self.language, self._end_probability)
        finally:
            self._speculating = False
            self._restore(saved)

    def _final_pass(self) -> Stepwise[str]:
        """Decode to the end over the whole buffer; the text not returned before."""
        self._end_probability = None
        if self._buffer.shape[0] > 0:
            self._forget_unsent_text()
            yield from self._step(final=True)
        return self._sent.advance(self._text(final=True), final=True)

    def _save(self) -> SavedState:
        return SavedState(
            buffer=self._buffer,
            unstepped=self._unstepped,
            cached_audio_tokens=self._cached_audio_tokens,
            committed=list(self._committed),
            times=list(self._times),
            answer=list(self._answer),
            sent=self._sent.text,
            last_text_time=self._last_text_time,
            steps=self.steps,
            reused_tokens=self.reused_tokens,
            windows=self._audio_cache.saved(),
        )

    def _restore(self, saved: SavedState) -> None:
        """Back to ``saved``: the cache keeps the KV of the prefix and of the audio that both the saved state and
        the speculation's prefill kept (the rest of it the speculation computed)."""
        if self.steps != saved.steps:  # a speculative step ran: drop what it added to the cache
            self._crop(min(saved.cached_audio_tokens, self.reused_tokens - self._prefix_len))
        self._buffer, self._unstepped = saved.buffer, saved.unstepped
        self._committed, self._times, self._answer = saved.committed, saved.times, saved.answer
        self._sent = SentText(saved.sent)
        self._last_text_time = saved.last_text_time
        self.steps, self.reused_tokens = saved.steps, saved.reused_tokens
        self._audio_cache.restore(saved.windows)

    @torch.inference_mode()
    def prefill(self) -> Prefill:
        """Bring the KV cache up to date with the buffer and the answer so far.

        Only what changed is computed: the cache is cropped to the prompt
        prefix plus the audio tokens of unchanged leading windows, and the rest
        (audio tail, prompt suffix, answer) is prefilled onto it.
        """
        model = self._model
        encoded = self._audio_cache.encode(model, model.log_mel(self._buffer))
        audio = encoded.embeddings.to(model.dtype)
        self._crop(encoded.stable_tokens)
        start = self._prefix_len + self._cached_audio_tokens
        parts = [audio[self._cached_audio_tokens :].unsqueeze(0), self._suffix_embeds]
        if self._answer:
            parts.append(model.embed_tokens(self._answer))
        recorder = AttentionRecorder(self._heads_by_layer)
        prefill = torch.cat(parts, dim=1)
        self.reused_tokens = start
        logits = model.forward(prefill, start, self._cache, alignment_recorder=recorder)
        self._cached_audio_tokens = audio.shape[0]
        return Prefill(logits, recorder, start + prefill.shape[1], audio.shape[0])

    @torch.inference_mode()
    def _step(self, final: bool) -> Stepwise[None]:
        new_seconds = self._unstepped / SAMPLE_RATE
        self._unstepped = 0
        self.steps += 1
        model = self._model
        state = self.prefill()
        logits, recorder, position, audio_tokens = state.logits, state.recorder, state.position, state.audio_tokens
        audio_span = (self._prefix_len, self._prefix_len + audio_tokens)
        previous = self._last_attended_token()
        in_preamble = not self._options.language and model.token_ids.asr_text not in self._committed
        new_tokens: list[int] = []
        new_times: list[float] = []
        limit = self._step_limit(final, new_seconds, in_preamble)
        for index in range(limit):
            if self._finishing and not final:
                break  # the speaker has finished: the final pass is what they wait for
            if self._speculating and self._should_yield():
                raise Preempted  # another stream's step or final pass waits, or this pass is no longer wanted
            token = int(logits.argmax())
            attended = self._policy.attended_token(recorder.audio_attention(*audio_span))
            # The language preamble and special tokens do not track the audio: no policy applies.
            is_text = not in_preamble and token not in model.token_ids.special
            verdict = self._verdict(token, logits, attended, previous, audio_tokens, final, in_preamble, is_text)
            if verdict is Verdict.REWIND:
                _LOGGER.debug("Rewind: attention jumped from token %s to %s", previous, attended)
                new_tokens, new_times = [], []
                self._last_text_time = None
            if verdict is not Verdict.EMIT:
                break
            new_tokens.append(token)
            new_times.append(self.offset_seconds + attended / AUDIO_TOKENS_PER_SECOND)
            if is_text:
                previous = attended
                self._last_text_time = new_times[-1]
            in_preamble = in_preamble and token != model.token_ids.asr_text
            if index + 1 == limit:
                break  # no token follows: its forward would be computed for nothing
            recorder = AttentionRecorder(self._heads_by_layer)
            logits = yield TokenPass(token, position, self._cache, recorder)
            position += 1
        new_tokens, new_times = self._guarded(new_tokens, new_times, final, limit)
        self._committed += new_tokens
        self._answer += new_tokens
        self._times += new_times

    def _step_limit(self, final: bool, new_seconds: float, in_preamble: bool) -> int:
        """Tokens this step may write: the utterance's budget, and a non-final step what its new audio can hold."""
        budget = max(0, max_new_tokens(self._utterance_samples() / SAMPLE_RATE) - len(self._committed))
        if final:
            return budget
        return min(budget, step_token_cap(new_seconds, in_preamble))

    def _verdict(
        self,
        token: int,
        logits: torch.Tensor,
        attended: int,
        previous: int | None,
        audio_tokens: int,
        final: bool,
        in_preamble: bool,
        is_text: bool,
    ) -> Verdict:
        """The AlignAtt decision on the model's greedy token."""
        if token in self._model.token_ids.eos:
            self._end_probability = float(logits.float().softmax(dim=-1)[list(self._model.token_ids.eos)].sum())
            return Verdict.END
        if final:
            return Verdict.EMIT
        if in_preamble and self._buffer.shape[0] < self._settings.language_seconds * SAMPLE_RATE:
            return Verdict.HOLD  # the language, once committed, holds for the utterance: decide it on enough audio
        if not is_text:
            return Verdict.EMIT
        if self._policy.jumped_back(attended, previous):
            return Verdict.REWIND
        if self._policy.at_border(attended, audio_tokens) or self._policy.unsure(logits):
            return Verdict.HOLD
        return Verdict.EMIT

    def _guarded(self, tokens: list[int], times: list[float], final: bool, limit: int) -> tuple[list[int], list[float]]:
        """A step ending in a loop is discarded; the final pass keeps the loop's first copy only.

        Streamed text cannot be taken back, so a hallucinated loop ("the the the ...")
        must never be committed by a non-final step.
        """
        if final and tokens and len(tokens) == limit:
            _LOGGER.warning("The final pass used its whole budget of %d tokens; the transcript may be cut", limit)
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
            del self._answer[max(preamble, len(self._answer) - dropped) :]

    def _last_attended_token(self) -> int | None:
        if self._last_text_time is None:
            return None
        return round((self._last_text_time - self.offset_seconds) * AUDIO_TOKENS_PER_SECOND)

    def _cut_if_needed(self) -> None:
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
        self._crop(0)
        # The answer fed back keeps its language preamble and the text whose audio remains.
        preamble = self._preamble_length()
        # A unit heard within the border before the cut stays too: attended times are the heads'
        # estimate, and a word whose end remains but whose text left would be written again.
        keep = self._first_unit_attending_from(self.offset_seconds - self._policy.border_seconds, preamble)
        self._answer = self._committed[:preamble] + self._committed[keep:]
        _LOGGER.debug("Cut %s window(s); buffer starts at %.2f s", windows, self.offset_seconds)

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

    def _first_unit_attending_from(self, offset: float, preamble: int) -> int:
        """The first committed token of the earliest unit with a token attending at or after ``offset``.

        The answer is cut at a unit boundary, and only before units whose audio
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
