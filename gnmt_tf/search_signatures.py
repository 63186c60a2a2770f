"""Names of the whole-search signatures an export may carry
(`gnmt_tf.export.search_signature`), shared by the exporter and the
runtimes without importing TensorFlow: ``search_beam<K>`` runs one
sentence's beam search with `K` beams."""

import re

SIGNATURE_PREFIX = "search_beam"
_SIGNATURE_PATTERN = re.compile(rf"{SIGNATURE_PREFIX}([1-9][0-9]*)")


def search_signature_name(beam_size):
    """The signature name of the search with `beam_size` beams."""
    return f"{SIGNATURE_PREFIX}{int(beam_size)}"


def search_beam_sizes(signature_names):
    """`{beam size: signature name}` of the search signatures among
    `signature_names`."""
    sizes = {}
    for name in signature_names:
        match = _SIGNATURE_PATTERN.fullmatch(name)
        if match:
            sizes[int(match.group(1))] = name
    return sizes


def check_search_beam_size(beam_size):
    """Raises a ValueError unless `beam_size` is None or an int >= 2 (beam
    1 is greedy search, which the host loop runs as cheaply)."""
    if beam_size is not None and (isinstance(beam_size, bool)
                                  or not isinstance(beam_size, int)
                                  or beam_size < 2):
        raise ValueError(f"search beam size must be an integer >= 2, got "
                         f"{beam_size!r}")
