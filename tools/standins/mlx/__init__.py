"""Stand-in for Apple's ``mlx`` package: only what ``mlx_qwen3_asr``'s stand-in and our loader touch."""
