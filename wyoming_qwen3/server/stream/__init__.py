"""One stream, from audio to transcript.

``audio`` (any Wyoming format to 16 kHz mono float32) -> ``speech_activity``
(where speech starts and stops: Silero, in ``silero``'s process) -> ``turn``
(the turn's decisions; ``completeness``: whether the words sound whole) ->
``utterance`` (those decisions carried out: steps and the final pass on the
inference thread) -> ``transcript`` (the events sent; ``emission_log``).
"""
