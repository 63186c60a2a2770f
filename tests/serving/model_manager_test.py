"""Hot version reload while requests stream in."""

import os
import shutil
import threading
import time

import pytest

from serving.client import TranslationClient
from serving.client import TranslationError
from serving.model_manager import VersionPolicy
from serving.model_manager import list_versions
from serving.model_manager import wait_until_served


def test_version_policy():
    assert VersionPolicy.parse("latest").select([3, 1, 2]) == [3]
    assert VersionPolicy.parse("latest:2").select([3, 1, 2]) == [2, 3]
    assert VersionPolicy.parse("all").select([3, 1]) == [1, 3]
    assert VersionPolicy.parse("specific:1,3").select([1, 2, 3]) == [1, 3]
    for bad in ("newest", "latest:0", "specific:", "all:2", "latest:x"):
        with pytest.raises(ValueError):
            VersionPolicy.parse(bad)


def test_list_versions_ignores_incomplete_folders(tmp_path):
    for name in ("1", "2", "tmp-3", "10"):
        (tmp_path / name).mkdir()
    for name in ("1", "10", "tmp-3"):
        (tmp_path / name / "saved_model.pb").write_bytes(b"")
    assert list_versions(str(tmp_path)) == [1, 10]
    assert list_versions(str(tmp_path / "missing")) == []


def test_hot_reload_under_load_has_no_failures(start_server, make_base,
                                               toy_versions):
    base = make_base((1,))
    server = start_server({"toy": base}, poll_interval_s=0.1)
    client = TranslationClient(server.target, "toy", timeout=10, max_retries=0)
    per_thread, failures, stop = [[], [], []], [], threading.Event()

    def stream(seen):
        deadline = time.monotonic() + 60
        for _ in range(2000):  # bounded in count and time
            if stop.is_set() or time.monotonic() > deadline:
                return
            try:
                (text,), _, version = client.predict(["abc"])
                seen.append((version, text))
            except TranslationError as e:
                failures.append(str(e))

    threads = [threading.Thread(target=stream, args=(seen,))
               for seen in per_thread]
    for t in threads:
        t.start()
    try:
        time.sleep(0.3)
        # publish version 2 the way exporters should: copy, then rename
        staging = os.path.join(base, ".staging-2")
        shutil.copytree(toy_versions[2], staging)
        os.rename(staging, os.path.join(base, "2"))
        assert wait_until_served(server.manager, "toy", 2, timeout=30)
        deadline = time.monotonic() + 30
        while server.manager.served_versions("toy") != [2]:
            assert time.monotonic() < deadline, "version 1 was not unloaded"
            time.sleep(0.05)
        time.sleep(0.3)
    finally:
        stop.set()
        for t in threads:
            t.join(60)
    assert client.model_status() == {1: "END", 2: "AVAILABLE"}
    client.close()
    assert failures == []
    seen = [s for thread in per_thread for s in thread]
    assert {v for v, _ in seen} == {1, 2} and len(seen) > 10
    assert all(text == {1: "ABC", 2: "v2 ABC"}[v] for v, text in seen)
    for thread in per_thread:  # each stream switched once, never back
        versions = [v for v, _ in thread]
        assert versions == sorted(versions)


def test_broken_version_keeps_old_one_serving(start_server, make_base):
    base = make_base((1,))
    server = start_server({"toy": base}, poll_interval_s=0.05,
                          max_load_attempts=1)
    broken = os.path.join(base, "5")
    os.mkdir(broken)
    with open(os.path.join(broken, "saved_model.pb"), "wb") as f:
        f.write(b"not a saved model")
    deadline = time.monotonic() + 10
    while dict((v, s) for v, s, _ in server.manager.status("toy")).get(5) != "END":
        assert time.monotonic() < deadline, "version 5 was never tried"
        time.sleep(0.05)
    assert "load failed" in server.manager.status("toy", 5)[0][2]
    with TranslationClient(server.target, "toy") as client:
        assert client.translate(["x"]) == ["X"]
        assert client.model_status()[5] == "END"
    assert server.manager.served_versions("toy") == [1]


def test_failing_warmup_fails_the_load(start_server, make_base, warmup_writer):
    base = make_base((1,))
    warmup_writer(os.path.join(base, "1"), [("nope", {"text": [b"x"]})])
    server = start_server({"toy": base})
    (version, state, error), = server.manager.status("toy")
    assert (version, state) == (1, "END")
    assert "warm-up failed" in error and "nope" in error
