"""The offline demo model's folder (``--model demo``): a tiny Qwen3-ASR in transformers' layout, its alignment
heads and its commands (``grammar.json``). training/demo_model.py made it; docs/demo-model.md says how well it
hears. The held-out set and the training card lie beside it in the source tree and are not installed."""

from pathlib import Path

FOLDER = Path(__file__).parent
