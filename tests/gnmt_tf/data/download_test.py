import hashlib
import http.server
import os
import subprocess
import sys
import threading

import pytest

from gnmt_tf.data import download

UNREACHABLE = "http://127.0.0.1:9/{name}"  # the discard port: refused


@pytest.fixture
def http_server(tmp_path):
    """A local HTTP server: `/ok/NAME` serves NAME's bytes from `files`,
    `/broken/NAME` promises 1000 bytes, sends 10 and hangs up, anything else
    is a 404. Yields (base URL, files dict)."""
    files = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            kind, _, name = self.path.strip("/").partition("/")
            if kind == "ok" and name in files:
                body = files[name]
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            elif kind == "broken":
                self.send_response(200)
                self.send_header("Content-Length", "1000")
                self.end_headers()
                self.wfile.write(b"0123456789")
                self.wfile.flush()
                self.close_connection = True
            else:
                self.send_error(404)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", files
    server.shutdown()
    server.server_close()


def _files_under(path):
    return sorted(os.path.relpath(os.path.join(root, name), path)
                  for root, _, names in os.walk(path) for name in names)


def test_fetch_verified_from_file_url(tmp_path):
    source = tmp_path / "remote" / "train.en.gz"
    source.parent.mkdir()
    source.write_bytes(b"payload")
    digest = hashlib.sha256(b"payload").hexdigest()
    cache = tmp_path / "cache"
    got = download.download_multi30k(
        cache, sums={"train.en.gz": digest},
        url_template=(source.parent.as_uri() + "/{name}"))
    assert (got / "train.en.gz").read_bytes() == b"payload"


def test_checksum_mismatch_leaves_nothing(tmp_path):
    source = tmp_path / "f.gz"
    source.write_bytes(b"tampered")
    destination = tmp_path / "cache" / "f.gz"
    with pytest.raises(download.DownloadError, match="checksum mismatch"):
        download.fetch_verified(source.as_uri(), destination, "0" * 64, progress=None)
    assert not destination.exists()
    assert list(destination.parent.iterdir()) == []


def test_known_sums_cover_every_file():
    assert len(download.MULTI30K_SHA256) == 15
    sums = download.parse_sha256sums("ab  x.gz\ncd *y.gz\n")
    assert sums == {"x.gz": "ab", "y.gz": "cd"}


def test_shared_copy_matches_known_sums(data_dir):
    for name, digest in download.MULTI30K_SHA256.items():
        assert download.sha256_of(data_dir / name) == digest, name


def test_cli_without_network_is_one_line_exit_2_and_leaves_nothing(tmp_path):
    cache = tmp_path / "cache"
    result = subprocess.run(
        [sys.executable, "-m", "gnmt_tf.cli.main", "data", "download",
         "multi30k", "--cache-dir", str(cache), "--url-template", UNREACHABLE],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    errors = [l for l in result.stderr.splitlines()
              if not l.startswith("downloading ")]
    assert len(errors) == 1, result.stderr
    assert errors[0].startswith("gnmt-tf data: error: cannot download "
                                "http://127.0.0.1:9/")
    assert _files_under(tmp_path) == []


def test_url_template_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(download.ENV_MULTI30K_URL, UNREACHABLE)
    with pytest.raises(download.DownloadError, match="127.0.0.1:9"):
        download.download_multi30k(tmp_path, progress=None)
    assert _files_under(tmp_path) == []


def test_http_errors_and_broken_transfers_leave_no_part_file(
        tmp_path, http_server):
    base, files = http_server
    files["a.gz"] = b"payload"
    sums = {"a.gz": hashlib.sha256(b"payload").hexdigest(),
            "b.gz": "0" * 64}
    cache = tmp_path / "cache"
    with pytest.raises(download.DownloadError, match="HTTP 404"):
        download.download_multi30k(cache, sums, base + "/ok/{name}",
                                   progress=None)
    # a.gz was fetched and verified before b.gz failed: it stays, alone.
    assert _files_under(cache) == [os.path.join("multi30k", "a.gz")]
    with pytest.raises(download.DownloadError, match="cannot download"):
        download.fetch_verified(base + "/broken/c.gz", cache / "c.gz",
                                "0" * 64, progress=None)
    assert _files_under(cache) == [os.path.join("multi30k", "a.gz")]
