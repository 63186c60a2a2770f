"""The native libraries' log lines stay off a command's stderr unless
`gnmt-tf --verbose`: the filter itself, and a real command in a subprocess."""

import os
import subprocess
import sys

import pytest

from gnmt_tf.cli.native_logs import is_native_log

NATIVE_LINES = [
    b"WARNING: All log messages before absl::InitializeLog() is called are "
    b"written to STDERR",
    b"I0000 00:00:1796395199.523517    4961 port.cc:153] oneDNN custom "
    b"operations are on.",
    b"E0000 00:00:1796395212.692171    4961 cuda_platform.cc:52] failed call "
    b"to cuInit: INTERNAL: CUDA error",
    b"W0512 10:01:02.123456   77 xla_bridge.cc:9] some warning",
    b"INFO: Created TensorFlow Lite XNNPACK delegate for CPU.",
]
OWN_LINES = [
    b"gnmt-tf translate: error: --beam-size: must be an integer in [1, 128]",
    b"warning: 1 input line(s) are mostly in characters unknown to the model",
    b"note: 2 empty input line(s) give empty output lines",
    b"Ein Hund rennt.",
    b"F0000 00:00:1.2 1 check.cc:1] Check failed: fatal lines stay",
]


@pytest.mark.parametrize("line", NATIVE_LINES)
def test_native_log_lines_are_recognised(line):
    assert is_native_log(line)


@pytest.mark.parametrize("line", OWN_LINES)
def test_other_lines_are_kept(line):
    assert not is_native_log(line)


_WRITE_BOTH = """
import os, sys
from gnmt_tf.cli.native_logs import quiet_native_logs
with quiet_native_logs():
    os.write(2, {native!r})
    print("python line", file=sys.stderr)
    os.write(2, b"native but no log line\\n")
print("after", file=sys.stderr)
"""


def test_the_filter_drops_native_log_lines_only():
    native = b"".join(line + b"\n" for line in NATIVE_LINES)
    result = subprocess.run(
        [sys.executable, "-c", _WRITE_BOTH.format(native=native)],
        capture_output=True, timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert result.returncode == 0, result.stderr
    assert sorted(result.stderr.decode().splitlines()) == [
        "after", "native but no log line", "python line"]


def _translate(*global_flags):
    return subprocess.run(
        [sys.executable, "-m", "gnmt_tf.cli.main", *global_flags,
         "translate", "--tflite", "multi30k-gnmt-en-de"],
        input=b"A dog runs.\n", capture_output=True, timeout=600,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})


def test_a_command_prints_no_native_log_lines_unless_verbose():
    quiet = _translate()
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stdout.decode().strip()
    err = quiet.stderr.decode()
    for marker in ("cuInit", "oneDNN", "absl::InitializeLog", "XNNPACK"):
        assert marker not in err, err
    assert not [line for line in quiet.stderr.splitlines()
                if is_native_log(line)], err

    verbose = _translate("--verbose")
    assert verbose.returncode == 0, verbose.stderr
    assert verbose.stdout == quiet.stdout
    assert any(is_native_log(line) for line in verbose.stderr.splitlines())
