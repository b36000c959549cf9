"""The torch backend: AlignAtt SimulStreaming with exact KV-cache reuse (``session``)."""
