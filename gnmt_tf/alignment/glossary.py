"""Moved to `gnmt_tf.pipeline.glossary` (TF-free, shared with the translation
pipeline); re-exported here for existing imports."""

from gnmt_tf.pipeline.glossary import (Glossary, GlossaryEntry, GlossaryError,
                                       GlossaryFile, TermMatch, TermMatcher)

__all__ = ["Glossary", "GlossaryEntry", "GlossaryError", "GlossaryFile",
           "TermMatch", "TermMatcher"]
