"""The model's context for one request: the server's ``--context``, the client's names and terms, the home's names.

Qwen3-ASR reads names and terms in its system prompt and spells the words it
hears as they are written there. A client's (``transcribe``'s
``transcript_names``, then ``transcript_terms``) are kept whole, in order, while
they fit ``MAX_CONTEXT_BYTES``. Home Assistant 2026.11 sends none; where the
server reads the home from Home Assistant (``home``), a request whose client sent
no names gets the home's, after the client's terms, under the model's budget,
tier by tier (``home.names``).
"""

from __future__ import annotations

from ..home.names import SEPARATOR, ContextNames, fitting
from .settings import HandlerConfig

#: Names and terms a client may send: whole entries are kept, in order, while
#: they fit. Qwen3-ASR's tokenizer is byte-level BPE, so 512 bytes are at most
#: 512 prompt tokens (about 130 for English names); their prefix is computed
#: once per context (``backends/simulkv/kv_cache``).
MAX_CONTEXT_ENTRIES = 64
MAX_CONTEXT_BYTES = 512


def bounded_entries(names: list[str] | None, terms: list[str] | None) -> tuple[list[str], int]:
    """The client's names, then its terms, as many whole ones as the bounds allow; and how many were dropped."""
    entries = [entry.strip() for entry in [*(names or []), *(terms or [])] if entry.strip()]
    kept = entries[: fitting(entries[:MAX_CONTEXT_ENTRIES], MAX_CONTEXT_BYTES)]
    return kept, len(entries) - len(kept)


def build_context(base: str, entries: list[str]) -> str:
    """System-prompt context: the server's context, then the names and terms."""
    return SEPARATOR.join(part for part in [base.strip(), *entries] if part)


def compose_context(config: HandlerConfig, entries: list[str], names_sent: bool) -> tuple[str, ContextNames | None]:
    """The context of a request with the client's ``entries``; and the home's names chosen for it (None: none
    asked for, since the client sent names or no home has been read)."""
    home = config.home.home if config.home is not None and not names_sent else None
    if home is None:
        return build_context(config.context, entries), None
    chosen = home.context_names(config.home_names_bytes, taken=tuple(entries))
    return build_context(config.context, [*entries, *chosen.kept]), chosen
