"""Wyoming speech-to-text server for Qwen3-ASR with streaming partial transcripts."""

__version__ = "0.3.8"
