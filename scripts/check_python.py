"""Exits with status 2 and says what is needed unless this interpreter is a
Python version gnmt-tf supports (setup.py's `PYTHON_REQUIRES`).

`make venv` runs it with `$(PYTHON)` before creating the virtualenv. It uses
only the standard library and reads the range from setup.py, so it runs on
any Python 3 and the range is written down once.
"""

import pathlib
import re
import sys

SETUP_PY = pathlib.Path(__file__).resolve().parents[1] / "setup.py"
_RANGE = re.compile(
    r'PYTHON_REQUIRES\s*=\s*">=(\d+)\.(\d+),<(\d+)\.(\d+)"')


def supported_range(setup_text):
    """`((major, minor) lowest, (major, minor) first unsupported)` from the
    `PYTHON_REQUIRES = ">=X.Y,<X.Z"` line of setup.py's text."""
    match = _RANGE.search(setup_text)
    if match is None:
        raise ValueError('setup.py has no PYTHON_REQUIRES = ">=X.Y,<X.Z" line')
    a, b, c, d = (int(g) for g in match.groups())
    return (a, b), (c, d)


def problem(version, setup_text):
    """None if `version` ((major, minor)) is supported, else the message."""
    low, high = supported_range(setup_text)
    if low <= tuple(version) < high:
        return None
    newest = (high[0], high[1] - 1)
    return ("gnmt-tf needs Python %d.%d to %d.%d (the versions its pinned "
            "packages have wheels for; see setup.py), not %d.%d. Install "
            "one and run e.g. `make venv PYTHON=python%d.%d`."
            % (low + newest + tuple(version) + newest))


def main():
    message = problem(sys.version_info[:2], SETUP_PY.read_text())
    if message:
        print(message, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
