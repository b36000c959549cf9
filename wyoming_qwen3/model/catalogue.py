"""The model catalogue, and finding or downloading a model folder.

A ``--model`` is either a catalogue name (downloaded once from the Hugging Face
hub into the download directory) or a local folder holding a Qwen3-ASR
checkpoint (``config.json`` with ``model_type: qwen3_asr``). Each backend loads
its own repository of a catalogue model: simulkv the transformers layout
(``Qwen/Qwen3-ASR-0.6B-hf``), mlx the original one (``Qwen/Qwen3-ASR-0.6B``).
"""

from __future__ import annotations

import importlib.util
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

_LOGGER = logging.getLogger(__name__)

DEFAULT_MODEL = "Qwen/Qwen3-ASR-0.6B"
#: The real models stream with 2 s encoder windows rather than their own 8 s: Qwen3-ASR's encoder
#: was trained with dynamic windows for streaming (technical report, arXiv 2601.21337), and a step
#: then encodes and prefills at most 2 s of open window instead of 8 (docs/performance.md, "Compute").
#: The demo model keeps its own: it was trained on whole commands.
STREAMING_ENCODER_WINDOW = 2.0
#: How much of a home's names (bytes of the ", "-joined list) a model's context holds, unless --ha-names-bytes says.
#: A name costs every streaming step its attention: on the random 0.6B shape in int8, 2 cores, 1240 bytes (100 names,
#: 745 prompt tokens) cost the first partial 3% and 2325 bytes (200 names, 1465 tokens) 20% (script/benchmark names,
#: docs/performance.md). The demo model learned lists of 2 to 16 names: a home of 30 whole helped it, 60 did not
#: (script/benchmark wer --set home, docs/demo-model.md).
QWEN3_ASR_NAMES_BYTES = 2048
DEMO_NAMES_BYTES = 300


@dataclass(frozen=True)
class CatalogueModel:
    """A model this server knows by name."""

    name: str
    description: str
    url: str
    #: backend -> the hub repository that backend loads; the backends listed are those that can.
    repos: dict[str, str] = field(default_factory=dict)
    #: An installed package whose folder holds the model, instead of a hub download (for every backend that loads it).
    package: str | None = None
    #: Alignment heads measured on this model's real weights, shipped in ``heads/``.
    heads_file: str | None = None
    #: simulkv's encoder attention window when ``--encoder-window`` is not given (None: the model's own).
    encoder_window_seconds: float | None = None
    #: How much of a home's names its context holds (bytes).
    names_bytes: int = QWEN3_ASR_NAMES_BYTES

    @property
    def backends(self) -> tuple[str, ...]:
        return ("simulkv",) if self.package else tuple(self.repos)

    @property
    def names(self) -> tuple[str, ...]:
        """What a user may call it: its name, or any of its repositories."""
        return (self.name, *self.repos.values())


CATALOGUE: dict[str, CatalogueModel] = {
    model.name: model
    for model in (
        CatalogueModel(
            name="Qwen/Qwen3-ASR-0.6B",
            description="Qwen3-ASR 0.6B: fast, 30 languages",
            url="https://huggingface.co/Qwen/Qwen3-ASR-0.6B",
            repos={"simulkv": "Qwen/Qwen3-ASR-0.6B-hf", "mlx": "Qwen/Qwen3-ASR-0.6B"},
            heads_file="Qwen3-ASR-0.6B.json",
            encoder_window_seconds=STREAMING_ENCODER_WINDOW,
        ),
        CatalogueModel(
            name="Qwen/Qwen3-ASR-1.7B",
            description="Qwen3-ASR 1.7B: most accurate, 30 languages",
            url="https://huggingface.co/Qwen/Qwen3-ASR-1.7B",
            repos={"simulkv": "Qwen/Qwen3-ASR-1.7B-hf", "mlx": "Qwen/Qwen3-ASR-1.7B"},
            heads_file="Qwen3-ASR-1.7B.json",
            encoder_window_seconds=STREAMING_ENCODER_WINDOW,
        ),
        # Quantized by mlx-qwen3-asr's own converter (4-bit decoder, 8-bit encoder, group 64): MLX
        # weights, for the mlx backend only. Its README measures 4-bit 0.6B at 4.7x the speed of
        # float16 for +0.4 points of WER (LibriSpeech test-clean); not run here (no Mac).
        CatalogueModel(
            name="moona3k/mlx-qwen3-asr-0.6b-4bit",
            description="Qwen3-ASR 0.6B, 4-bit MLX weights for Apple Silicon (mlx backend)",
            url="https://huggingface.co/moona3k/mlx-qwen3-asr-0.6b-4bit",
            repos={"mlx": "moona3k/mlx-qwen3-asr-0.6b-4bit"},
        ),
        CatalogueModel(
            name="moona3k/mlx-qwen3-asr-1.7b-4bit",
            description="Qwen3-ASR 1.7B, 4-bit MLX weights for Apple Silicon (mlx backend)",
            url="https://huggingface.co/moona3k/mlx-qwen3-asr-1.7b-4bit",
            repos={"mlx": "moona3k/mlx-qwen3-asr-1.7b-4bit"},
        ),
        CatalogueModel(
            name="demo",
            description="Offline demo: a tiny Qwen3-ASR trained on espeak-ng Home Assistant commands "
            "(closed vocabulary, English; a test model, not for real use)",
            url="https://github.com/QwenLM/Qwen3-ASR",
            package="wyoming_qwen3_demo",
            names_bytes=DEMO_NAMES_BYTES,
        ),
    )
}


class ModelNotFoundError(ValueError):
    """The model is neither in the catalogue nor a Qwen3-ASR folder, or cannot be fetched."""


@dataclass(frozen=True)
class ResolvedModel:
    """Where a model's files are, and what to call it in ``info``."""

    name: str
    path: Path
    description: str
    url: str
    #: The catalogue's measured alignment heads for this model, if any.
    heads_file: Path | None = None
    #: The catalogue's streaming encoder window for this model (None: the model's own).
    encoder_window_seconds: float | None = None
    #: How much of a home's names its context holds (bytes); a folder of one's own is taken for a Qwen3-ASR.
    names_bytes: int = QWEN3_ASR_NAMES_BYTES


def _heads_file(entry: CatalogueModel) -> Path | None:
    return Path(__file__).parent / "heads" / entry.heads_file if entry.heads_file else None


def _resolved(entry: CatalogueModel, folder: Path) -> ResolvedModel:
    return ResolvedModel(
        entry.name,
        folder,
        entry.description,
        entry.url,
        _heads_file(entry),
        entry.encoder_window_seconds,
        entry.names_bytes,
    )


def _package_folder(entry: CatalogueModel) -> Path:
    """The folder of the installed package that holds a model (the demo model's own distribution)."""
    assert entry.package is not None
    spec = importlib.util.find_spec(entry.package)
    if spec is None or spec.origin is None or not (Path(spec.origin).parent / "config.json").is_file():
        raise ModelNotFoundError(
            f"The {entry.name} model is not installed: pip install ./demo-model from the source tree "
            "(script/setup does)"
        )
    return Path(spec.origin).parent


def _local_folder_name(name: str) -> str:
    return name.replace("/", "--")


def _check_model_folder(path: Path) -> None:
    config_path = path / "config.json"
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ModelNotFoundError(f"{path} is not a model folder: cannot read {config_path}: {err}") from err
    if config.get("model_type") != "qwen3_asr":
        raise ModelNotFoundError(f"{path} holds a '{config.get('model_type')}' model, not a Qwen3-ASR (qwen3_asr) one")


def _catalogue_entry(model: str) -> CatalogueModel | None:
    wanted = model.lower()
    return next((m for m in CATALOGUE.values() if wanted in (n.lower() for n in m.names)), None)


def check_backend(model: str, backend: str) -> None:
    """Raise ModelNotFoundError when a catalogue model's files are not for ``backend``."""
    entry = _catalogue_entry(model)
    if entry is not None and backend not in entry.backends:
        raise ModelNotFoundError(
            f"{entry.name} holds weights for the {' or '.join(entry.backends)} backend, not {backend}: "
            f"use --backend {entry.backends[0]}, or another --model"
        )


def resolve_model(model: str, data_dirs: list[Path], download_dir: Path, backend: str = "simulkv") -> ResolvedModel:
    """Find ``model`` locally, downloading catalogue models that are missing (the repository ``backend`` loads)."""
    folder = Path(model).expanduser()
    if folder.is_dir():
        _check_model_folder(folder)
        return ResolvedModel(
            name=folder.name, path=folder, description=f"Qwen3-ASR from {folder}", url=folder.resolve().as_uri()
        )

    entry = _catalogue_entry(model)
    if entry is None:
        known = ", ".join(CATALOGUE)
        raise ModelNotFoundError(
            f"Unknown model '{model}': use one of {known}, or the path of a local Qwen3-ASR folder"
        )

    if entry.package is not None:
        return _resolved(entry, _package_folder(entry))

    repo = entry.repos.get(backend)
    if repo is None:
        raise ModelNotFoundError(f"{entry.name} has no files for the {backend} backend")
    for data_dir in [*data_dirs, download_dir]:
        candidate = data_dir / _local_folder_name(repo)
        if (candidate / "config.json").is_file():
            _LOGGER.debug("Found %s in %s", repo, candidate)
            return _resolved(entry, candidate)

    target = download_dir / _local_folder_name(repo)
    _LOGGER.info("Downloading %s to %s", repo, target)
    try:
        from huggingface_hub import snapshot_download

        snapshot_download(repo_id=repo, local_dir=target)
    except Exception as err:  # the hub client raises many types; all mean "not fetched"
        raise ModelNotFoundError(
            f"Could not download {repo} to {target}: {str(err).rstrip('.')}. "
            "Check the network, or pass --model with a local folder."
        ) from err
    _check_model_folder(target)
    return _resolved(entry, target)
