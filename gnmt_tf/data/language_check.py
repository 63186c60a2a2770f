"""Language identification for corpus cleaning, when it is installed.

The detector is `gnmt_tf.pipeline.language_id.LanguageDetector` (lingua), imported
only when a run asks for the check; `.importlinter` names this one import
of `pipeline` from `gnmt_tf` as an exception to its layers.
"""

UNDETERMINED = "und"


def language_identifier(languages):
    """A `text -> language code or None` function over `languages` (None
    when the text gives nothing to go on).

    Raises:
      ModuleNotFoundError: the detector is not installed (the message says
        what to install).
    """
    try:
        from gnmt_tf.pipeline.language_id import LanguageDetector
    except ModuleNotFoundError as e:
        raise ModuleNotFoundError(
            f"the language check needs gnmt_tf.pipeline.language_id and "
            f"lingua-language-detector ({e}): pip install "
            "'gnmt-tf[gateway]', or leave out --check-language",
            name=e.name) from None
    detector = LanguageDetector.for_languages(languages)

    def language_of(text):
        found = detector.detect(text).language
        return None if found == UNDETERMINED else found

    return language_of
