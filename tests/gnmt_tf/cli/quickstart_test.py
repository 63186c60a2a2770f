"""`gnmt-tf quickstart`'s data step: find Multi30k or download it."""

import functools
import http.server
import threading

import pytest

from gnmt_tf.errors import UsageError
from gnmt_tf.cli.quickstart import quickstart_data
from gnmt_tf.data import download


@pytest.fixture
def fresh_machine(tmp_path, monkeypatch):
    """No $GNMT_TF_DATA and an empty cache under tmp_path."""
    monkeypatch.delenv("GNMT_TF_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "gnmt_tf" / "multi30k"


@pytest.fixture
def multi30k_mirror(data_dir):
    """A local HTTP server serving the real Multi30k files; yields its URL
    template."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler,
                                directory=str(data_dir))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/{{name}}"
    server.shutdown()
    server.server_close()


def test_downloads_verified_multi30k_once(fresh_machine, multi30k_mirror,
                                          monkeypatch):
    monkeypatch.setenv(download.ENV_MULTI30K_URL, multi30k_mirror)
    assert quickstart_data(progress=None) == fresh_machine
    assert sorted(p.name for p in fresh_machine.iterdir()) == sorted(
        download.MULTI30K_SHA256)
    # Next time the cache is used without the network.
    monkeypatch.setenv(download.ENV_MULTI30K_URL, "http://127.0.0.1:9/{name}")
    assert quickstart_data(progress=None) == fresh_machine


def test_without_network_fails_cleanly(fresh_machine, monkeypatch):
    monkeypatch.setenv(download.ENV_MULTI30K_URL, "http://127.0.0.1:9/{name}")
    with pytest.raises(UsageError, match="cannot download.*--data-dir"):
        quickstart_data(progress=None)
    assert not fresh_machine.exists()
    with pytest.raises(FileNotFoundError, match="no data directory"):
        quickstart_data(download=False)


def test_given_directory_wins(fresh_machine, tmp_path, monkeypatch):
    monkeypatch.setenv(download.ENV_MULTI30K_URL, "http://127.0.0.1:9/{name}")
    assert quickstart_data(tmp_path, progress=None) == tmp_path
