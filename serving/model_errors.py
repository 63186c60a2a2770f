"""One-line messages for errors a model raises while serving a request.

TensorFlow's `InvalidArgumentError` from a signature call carries a graph
dump: "Graph execution error:", "Detected at node ...", stack-trace lines, the
failing node (`[[{{node Assert/Assert}}]]`) and the function
(`[Op:__inference_...]`). What the client needs is the reason, e.g. the
export's in-graph check

    assertion failed: [input too long: the limit is 250 subwords, got] [4096]
    [(split it into sentences)]

becomes "input too long: the limit is 250 subwords, got 4096 (split it into
sentences)".
"""

import re

MAX_MESSAGE_CHARS = 500

_NOISE = re.compile(r"^(Graph execution error:|Detected at node |"
                    r"<stack traces unavailable>|File \"|\[\[\{\{node )")
_TRAILER = re.compile(r"\s*(\[\[\{\{node [^}]*\}\}\]\])?\s*(\[Op:[^\]]*\])?\s*$")
_ASSERTION = re.compile(r"assertion failed:\s*(.*)")


def _assertion_text(data: str) -> str:
    """`[a] [b c] [d]` (one bracket group per Assert data tensor) -> `a b c d`."""
    data = data.strip()
    if data.startswith("[") and data.endswith("]"):
        data = data[1:-1]
    return data.replace("] [", " ")


def describe_model_error(error: BaseException) -> str:
    """The reason of a model error on one line (at most `MAX_MESSAGE_CHARS`)."""
    text = getattr(error, "message", None) or str(error)
    lines = [_TRAILER.sub("", line).strip() for line in text.splitlines()]
    lines = [line for line in lines if line and not _NOISE.match(line)]
    reasons = []
    for line in lines:
        match = _ASSERTION.match(line)
        reasons.append(_assertion_text(match.group(1)) if match else line)
    message = "; ".join(reasons) or type(error).__name__
    if len(message) > MAX_MESSAGE_CHARS:
        message = message[:MAX_MESSAGE_CHARS - 3] + "..."
    return message
