"""The language table: Wyoming/ISO codes and the names Qwen3-ASR uses for them.

This is the one place that maps between the two. Home Assistant sends codes
such as ``en`` or ``en-US``; Qwen3-ASR prompts and answers with names such as
``English`` (``language English<asr_text>...``).
"""

from __future__ import annotations

from collections.abc import Iterable

AUTO_LANGUAGE = "auto"

#: ISO 639 code -> Qwen3-ASR language name, for the 30 languages of the
#: published checkpoints (``qwen_asr.inference.utils.SUPPORTED_LANGUAGES``).
LANGUAGE_NAMES: dict[str, str] = {
    "ar": "Arabic",
    "cs": "Czech",
    "da": "Danish",
    "de": "German",
    "el": "Greek",
    "en": "English",
    "es": "Spanish",
    "fa": "Persian",
    "fi": "Finnish",
    "fil": "Filipino",
    "fr": "French",
    "hi": "Hindi",
    "hu": "Hungarian",
    "id": "Indonesian",
    "it": "Italian",
    "ja": "Japanese",
    "ko": "Korean",
    "mk": "Macedonian",
    "ms": "Malay",
    "nl": "Dutch",
    "pl": "Polish",
    "pt": "Portuguese",
    "ro": "Romanian",
    "ru": "Russian",
    "sv": "Swedish",
    "th": "Thai",
    "tr": "Turkish",
    "vi": "Vietnamese",
    "yue": "Cantonese",
    "zh": "Chinese",
}
_CODES_BY_NAME = {name.lower(): code for code, name in LANGUAGE_NAMES.items()}
#: Regions whose Chinese is Cantonese: ``zh-HK`` and ``zh-MO`` (also ``zh-Hant-HK``) mean ``yue``.
_CANTONESE_REGIONS = {"hk", "mo"}


class UnknownLanguageError(ValueError):
    """A language that is not in the table, or that the model does not speak."""


def language_code(name: str) -> str | None:
    """Return the code for a Qwen3-ASR language name, or None when unknown."""
    return _CODES_BY_NAME.get(name.strip().lower())


def resolve_language(language: str | None, supported: Iterable[str]) -> str | None:
    """Turn a requested language into a Qwen3-ASR name; None means detect it.

    Accepts a code (``en``), a regional code (``en-US``, ``en_GB``) or a Qwen
    name (``English``). ``supported`` lists the names the loaded model speaks.
    """
    if language is None or not language.strip() or language.strip().lower() == AUTO_LANGUAGE:
        return None

    requested = language.strip()
    parts = requested.replace("_", "-").lower().split("-")
    code = _CODES_BY_NAME.get(requested.lower()) or parts[0]
    if code == "zh" and _CANTONESE_REGIONS.intersection(parts[1:]):
        code = "yue"
    name = LANGUAGE_NAMES.get(code)
    supported_names = sorted(supported)
    if name is None or name not in supported_names:
        codes = ", ".join(sorted(c for c, n in LANGUAGE_NAMES.items() if n in supported_names))
        raise UnknownLanguageError(f"Unknown language '{language}'; this model supports: {AUTO_LANGUAGE}, {codes}")
    return name


def language_codes(names: Iterable[str]) -> list[str]:
    """Codes for the given Qwen3-ASR names, sorted, skipping names not in the table."""
    return sorted(code for code in (language_code(n) for n in names) if code is not None)
