"""`gnmt-tf quickstart`: the shipped model translating and scored, without
network; its data step (find Multi30k or download it)."""

import functools
import http.server
import re
import threading

import pytest

from gnmt_tf.errors import UsageError
from gnmt_tf.cli.quickstart import quickstart_data
from gnmt_tf import pretrained
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


@pytest.fixture
def no_network(monkeypatch):
    """Any connection attempt fails, as on a machine without network."""
    import socket

    def refuse(*args, **kwargs):
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setenv(download.ENV_MULTI30K_URL, "http://127.0.0.1:9/{name}")


def _write_split(folder, split, lines):
    import gzip

    for lang, sentences in lines.items():
        with gzip.open(folder / f"{split}.{lang}.gz", "wt",
                       encoding="utf-8") as f:
            f.write("".join(s + "\n" for s in sentences))


def test_quickstart_translates_and_scores_the_shipped_model(
        tmp_path, no_network, capsys):
    """`gnmt-tf quickstart` end to end on the shipped Transformer: three
    directions, an HTML page with its markup, and sacreBLEU on a
    three-line test_2016_flickr (`--max-lines 2`)."""
    from gnmt_tf.cli.main import main

    _write_split(tmp_path, "test_2016_flickr", {
        "en": ["A dog runs in the park.", "Two men are playing football.",
               "A woman is reading a book."],
        "de": ["Ein Hund rennt im Park.", "Zwei Männer spielen Fußball.",
               "Eine Frau liest ein Buch."]})
    code = main(["quickstart", "--data-dir", str(tmp_path),
                 "--max-lines", "2"])
    out = capsys.readouterr().out
    assert code == 0, out
    for direction in ("en->de", "en->fr", "de->en"):
        assert f"\n  {direction}\n" in out
    translations = [l.strip()[3:] for l in out.splitlines()
                    if l.strip().startswith("=> ")]
    assert len(translations) >= 5 and all(translations), out
    assert "Hund" in out and "chien" in out.lower()
    # The page keeps its markup.
    page = out[out.index("[3/4]"):out.index("[4/4]")]
    assert page.count("<b>") == 2 and page.count("<i>") == 2, page
    assert "2 of 3 sentences" in out
    bleu = re.search(r"^BLEU = (\d+\.\d+) ", out, re.MULTILINE)
    assert bleu and 0 < float(bleu.group(1)) <= 100, out
    card = pretrained.describe("multi30k-transformer")["scores"]
    expected = card["sacrebleu"]["en-de"]["test_2016_flickr"]
    assert f"the model card says BLEU {expected:.2f}" in out


def test_direction_task_follows_the_model():
    from gnmt_tf.cli.quickstart import direction_task

    class TaskSpace:
        fixed_task = {}
        default_task = {"src_lang": "en", "tgt_lang": "de",
                        "tags": ("caption",)}
        trained_tasks = [{"src_lang": "en", "tgt_lang": "de"}]

        def task_inputs(self):
            return [type("T", (), {"name": n})()
                    for n in ("src_lang", "tgt_lang", "tags")]

    class Bilingual:
        fixed_task = {"src_lang": "en", "tgt_lang": "de"}

        def task_inputs(self):
            return ()

    assert direction_task(TaskSpace(), "en", "de") == {
        "src_lang": "en", "tgt_lang": "de", "tags": ["caption"]}
    assert direction_task(TaskSpace(), "de", "en") is None  # untrained
    assert direction_task(Bilingual(), "en", "de") == {}
    assert direction_task(Bilingual(), "en", "fr") is None
