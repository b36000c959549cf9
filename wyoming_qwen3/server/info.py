"""The ``info`` this server describes itself with."""

from __future__ import annotations

from wyoming.info import AsrModel, AsrProgram, Attribution, Info

from .. import __version__
from ..model.catalogue import ResolvedModel
from ..model.languages import language_codes

PROGRAM_NAME = "qwen3-asr"


def build_info(model: ResolvedModel, backend_name: str, languages: list[str], endpointing: bool = False) -> Info:
    """Info for one loaded model; ``languages`` are Qwen3-ASR names.

    With ``endpointing`` the server ends turns itself, so Home Assistant runs no VAD of its own.
    """
    return Info(
        asr=[
            AsrProgram(
                name=PROGRAM_NAME,
                description=f"Qwen3-ASR with streaming partial transcripts ({backend_name} backend)",
                attribution=Attribution(name="wyoming-qwen3", url="https://github.com/QwenLM/Qwen3-ASR"),
                installed=True,
                version=__version__,
                supports_transcript_streaming=True,
                requires_external_vad=not endpointing,
                models=[
                    AsrModel(
                        name=model.name,
                        description=model.description,
                        attribution=Attribution(name="Qwen team, Alibaba Cloud", url=model.url),
                        installed=True,
                        version=None,
                        languages=language_codes(languages),
                    )
                ],
            )
        ]
    )
