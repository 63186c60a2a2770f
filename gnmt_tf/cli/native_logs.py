"""Keeps the native libraries' log lines off the command's stderr.

TensorFlow, XLA and LiteRT log from C++ straight to file descriptor 2:
start-up lines such as ``I0000 ... port.cc:153] oneDNN custom operations
are on``, ``E0000 ... failed call to cuInit`` on a machine without a GPU,
absl's ``WARNING: All log messages before absl::InitializeLog() is called
are written to STDERR`` and LiteRT's ``INFO: Created TensorFlow Lite
XNNPACK delegate for CPU``. They read like errors but say nothing about
the command. ``TF_CPP_MIN_LOG_LEVEL`` stops only some of them: the lines
logged while TensorFlow's libraries load come before absl reads it.

`quiet_native_logs` therefore runs the command with descriptor 2 on a
pipe, drops the lines in those formats (`is_native_log`) and passes every
other line on; Python's `sys.stderr` (the command's own messages,
warnings, progress bars) writes to the terminal directly, as before.
`gnmt-tf --verbose` shows everything instead (`verbose_native_logs`).
"""

import contextlib
import os
import re
import sys
import threading

# absl/glog (TensorFlow, XLA): "I0000 00:00:1796395199.523517    4961
# port.cc:153] ..."; W and E lines too (F, a fatal error, is kept).
_ABSL_LINE = rb"[IWE]\d{4} \d\d:\d\d:[\d.]+ +\d+ [^\]\s]+\] "
_ABSL_BANNER = rb"WARNING: All log messages before absl::InitializeLog\(\)"
_TFLITE_LINE = rb"(?:INFO|WARNING): "  # TFLite/LiteRT's own logger
_NATIVE_LOG = re.compile(
    rb"^(?:%s|%s|%s)" % (_ABSL_LINE, _ABSL_BANNER, _TFLITE_LINE))

# Seconds to wait, on the way out, for lines still in the pipe (a child
# process that outlives the command may hold it open).
_DRAIN_SECONDS = 2.0


def is_native_log(line: bytes) -> bool:
    """Whether a line of stderr is a native library's log line."""
    return _NATIVE_LOG.match(line) is not None


def verbose_native_logs():
    """Asks TensorFlow for all its log lines (before it is imported)."""
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "0"


def _write_all(fd, data):
    while data:
        data = data[os.write(fd, data):]


def _forward(read_fd, out_fd):
    """Copies the pipe to `out_fd` line by line, without native log lines."""
    pending = b""
    with os.fdopen(read_fd, "rb", buffering=0) as pipe:
        while True:
            chunk = pipe.read(1 << 16)
            if not chunk:
                break
            *lines, pending = (pending + chunk).split(b"\n")
            kept = b"".join(line + b"\n" for line in lines
                            if not is_native_log(line))
            if kept:
                _write_all(out_fd, kept)
    if pending and not is_native_log(pending):
        _write_all(out_fd, pending)


@contextlib.contextmanager
def quiet_native_logs():
    """Runs the body with the native log lines dropped from stderr (see
    the module docstring). Does nothing where `sys.stderr` is not the
    process's own (a test capturing it) or has no descriptor."""
    if sys.stderr is not sys.__stderr__:
        yield
        return
    try:
        sys.stderr.flush()
        terminal = os.dup(2)
    except (AttributeError, OSError, ValueError):
        yield
        return
    read_fd, write_fd = os.pipe()
    python_stderr = sys.stderr
    sys.stderr = open(os.dup(terminal), "w", buffering=1,
                      encoding=python_stderr.encoding,
                      errors=python_stderr.errors)
    os.dup2(write_fd, 2)
    os.close(write_fd)
    forwarder = threading.Thread(target=_forward, args=(read_fd, terminal),
                                 daemon=True)
    forwarder.start()
    try:
        yield
    finally:
        sys.stderr.flush()
        python_stderr.flush()
        os.dup2(terminal, 2)  # the pipe's last write end: the reader ends
        forwarder.join(_DRAIN_SECONDS)
        sys.stderr.close()
        sys.stderr = python_stderr
        if not forwarder.is_alive():  # else it may still write there
            os.close(terminal)
