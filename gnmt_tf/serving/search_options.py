"""The search options of an export's ``translate_with_options`` signature,
and the one check of their values.

The signature (`gnmt_tf.export.savedmodel`) takes three scalars: ``beam_size``
(int32, one of the beam sizes compiled in), ``length_penalty`` and
``coverage_penalty`` (float32, GNMT's alpha and beta). A non-finite
penalty would reach the search graph, which answers Infinity with a
translation and NaN with an internal error, so `check_search_options`
refuses both, with the same ranges as `gnmt-tf translate`'s --beam-size,
--alpha and --beta. The client checks what it sends, `gnmt-tf translate
--server` the flags it turns into options, and the server every request
(`gnmt_tf.serving.request_handler`, gRPC and REST alike).
"""

import math
from typing import Dict, Mapping

import numpy as np

SEARCH_SIGNATURE = "translate_with_options"
SEARCH_OPTION_TYPES = {"beam_size": np.int32, "length_penalty": np.float32,
                       "coverage_penalty": np.float32}


def _check_value(name: str, value) -> None:
    array = np.asarray(value)
    if name == "beam_size":
        if array.dtype.kind not in "iu" or (array < 1).any():
            raise ValueError(f"beam_size must be an integer >= 1, got "
                             f"{_shown(array)}")
    elif array.dtype.kind not in "iuf" or not np.isfinite(array).all():
        raise ValueError(f"{name} must be a finite number, got "
                         f"{_shown(array)}")


def _shown(array: np.ndarray) -> str:
    if array.ndim == 0:
        value = array.item()
        return (str(value) if isinstance(value, float)
                and not math.isfinite(value) else repr(value))
    return np.array2string(array, threshold=8)


def check_search_options(options: Mapping, require_all: bool = True
                         ) -> Dict[str, np.ndarray]:
    """`{name: numpy value}` of the search options in `options`, checked.

    Args:
      options: mapping of option names (`SEARCH_OPTION_TYPES`) to values
        (Python or NumPy numbers, or arrays: every element is checked).
      require_all: bool. All three options must be given (a client's);
        False checks those present and ignores other keys (a request's
        inputs).

    Raises:
      ValueError: a missing or unknown option (with `require_all`), a beam
        size that is not an integer >= 1, or a penalty that is not a finite
        number; one line, naming the option.
    """
    if require_all:
        missing = sorted(set(SEARCH_OPTION_TYPES) - set(options))
        unknown = sorted(set(options) - set(SEARCH_OPTION_TYPES))
        if missing or unknown:
            raise ValueError(f"search_options need exactly "
                             f"{sorted(SEARCH_OPTION_TYPES)}; missing "
                             f"{missing}, unknown {unknown}")
    checked = {}
    for name, dtype in SEARCH_OPTION_TYPES.items():
        if name in options:
            value = options[name]
            if isinstance(value, bool) or np.asarray(value).dtype == bool:
                raise ValueError(f"{name} must be a number, got {value!r}")
            _check_value(name, value)
            checked[name] = np.asarray(value, dtype=dtype)
    return checked
