"""Language identification for corpus cleaning, when it is installed.

The detector is `pipeline.language_id.LanguageDetector` (lingua), an
optional part of the distribution that `gnmt_tf` does not import: like the
model types, it is loaded by its declared name at run time, only when a run
asks for the check.
"""

DETECTOR = "pipeline.language_id:LanguageDetector"
UNDETERMINED = "und"


def language_identifier(languages):
    """A `text -> language code or None` function over `languages` (None
    when the text gives nothing to go on).

    Raises:
      ModuleNotFoundError: the detector is not installed (the message says
        what to install).
    """
    from gnmt_tf.model_types import load_object

    try:
        detector_class = load_object(DETECTOR)
    except ModuleNotFoundError as e:
        raise ModuleNotFoundError(
            f"the language check needs {DETECTOR.split(':')[0]} and "
            f"lingua-language-detector ({e}): pip install "
            "'gnmt-tf[gateway]', or leave out --check-language",
            name=e.name) from None
    detector = detector_class.for_languages(languages)

    def language_of(text):
        found = detector.detect(text).language
        return None if found == UNDETERMINED else found

    return language_of
