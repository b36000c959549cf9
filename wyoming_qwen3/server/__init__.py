"""The Wyoming side: options, connections, utterances, audio, info and zeroconf. Imports no torch."""
