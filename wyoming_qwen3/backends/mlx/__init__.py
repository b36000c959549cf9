"""The Apple Silicon backend: ``mlx-qwen3-asr`` re-transcribing a bounded buffer, units committed by local agreement."""
