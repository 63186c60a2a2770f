"""Benchmarks that write one key of a shared results JSON.

`benchmarks/decoding.py` gathers many techniques into
`benchmarks/results/decoding.json`; each technique's benchmark runs on its own
(they need different models and minutes) and replaces only its own key, with
the command that produced it, so reruns of one section keep the others.
"""

import json
import pathlib
import shlex
import sys

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from gnmt_tf.io_utils import write_text_atomic  # noqa: E402


def with_earlier(results, previous, keep_previous_as=None, keep=()):
    """`results` plus what a rerun must not lose from `previous` (the
    figures it replaces): every ``earlier*`` entry and the keys in `keep`
    as they were, and, with `keep_previous_as`, the rest of `previous`
    under that key (the last run, archived)."""
    kept = {key: value for key, value in previous.items()
            if key.startswith("earlier") or key in keep}
    if keep_previous_as:
        kept[keep_previous_as] = {key: value for key, value
                                  in previous.items() if key not in kept}
    return {**results, **kept}


def command_line(script, argv=None) -> str:
    """`python benchmarks/<script> <args>`, shell-quoted."""
    args = sys.argv[1:] if argv is None else list(argv)
    return " ".join(["python", f"benchmarks/{script}"]
                    + [shlex.quote(a) for a in args])


def update_section(path, key, value, command, keep_previous_as=None):
    """Sets `key` of the JSON object at `path` to `value` (a dict; its
    "command" entry is set to `command`), keeping every other key, and the
    section's ``earlier*`` entries (`with_earlier`: with
    `keep_previous_as`, its previous figures too); the file is rewritten
    atomically."""
    path = pathlib.Path(path)
    data = json.loads(path.read_text()) if path.exists() else {}
    previous = data.get(key)
    data[key] = with_earlier(dict(value, command=command),
                             previous if isinstance(previous, dict) else {},
                             keep_previous_as)
    write_text_atomic(path, json.dumps(data, indent=2, ensure_ascii=False)
                      + "\n")
    return data
