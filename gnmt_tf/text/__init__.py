"""Subword vocabularies (SentencePiece) used in Python and in-graph."""
