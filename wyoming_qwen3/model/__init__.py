"""Qwen3-ASR itself: its format and languages, the model catalogue (no torch), and the model on torch (``qwen``)."""
