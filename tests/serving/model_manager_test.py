"""Hot version reload while requests stream in."""

import os
import shutil
import threading
import time

import pytest

from gnmt_tf.serving.client import TranslationClient
from gnmt_tf.serving.client import TranslationError
from gnmt_tf.serving.model_manager import VersionPolicy
from gnmt_tf.serving.model_manager import list_versions
from gnmt_tf.serving.model_manager import wait_until_served


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


def _copy_slowly_first_part(source, target):
    """What a slow copy has written so far: `saved_model.pb` only."""
    os.mkdir(target)
    shutil.copy(os.path.join(source, "saved_model.pb"), target)


def _copy_rest(source, target):
    for name in os.listdir(source):
        if not os.path.exists(os.path.join(target, name)):
            src = os.path.join(source, name)
            if os.path.isdir(src):
                shutil.copytree(src, os.path.join(target, name))
            else:
                shutil.copy(src, target)


def _wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def test_slowly_copied_version_is_served_once_complete(
        start_server, make_base, toy_versions, caplog):
    """Issue 18: `saved_model.pb` first, `variables/` later; it used to be
    tried 3 times and then never served (END)."""
    base = make_base((1,))
    server = start_server({"toy": base}, poll_interval_s=0.05)
    target = os.path.join(base, "2")
    with caplog.at_level("WARNING", logger="gnmt_tf.serving"):
        _copy_slowly_first_part(toy_versions[2], target)
        manager = server.manager
        _wait_for(lambda: 2 in dict((v, s) for v, s, _ in manager.status("toy")),
                  10, "version 2 was never tried")
        time.sleep(1.5)  # a few polls and at least one back-off retry
        (_, state, error), = manager.status("toy", 2)
        assert state == "LOADING"  # not given up
        assert "load failed (attempt" in error and "variables" in error
        assert manager.served_versions("toy") == [1]
        _copy_rest(toy_versions[2], target)
        assert wait_until_served(manager, "toy", 2, timeout=10)
    failures = [r.getMessage() for r in caplog.records
                if "loading toy version 2 failed" in r.getMessage()]
    assert len(failures) >= 2  # each attempt logged, with the reason
    assert all("variables" in m and "retrying in" in m for m in failures)
    with TranslationClient(server.target, "toy") as client:
        _wait_for(lambda: client.model_status() == {1: "END", 2: "AVAILABLE"},
                  10, "version 1 was not unloaded")
        assert client.translate(["x"]) == ["v2 X"]


def test_changed_files_are_retried_before_the_back_off_ends(
        start_server, make_base, toy_versions):
    base = make_base((1,))
    server = start_server({"toy": base}, poll_interval_s=0.05,
                          load_retry_initial_s=60.0)
    target = os.path.join(base, "2")
    _copy_slowly_first_part(toy_versions[2], target)
    _wait_for(lambda: server.manager.status("toy")[-1][2], 10,
              "version 2 was never tried")
    start = time.monotonic()
    _copy_rest(toy_versions[2], target)
    assert wait_until_served(server.manager, "toy", 2, timeout=10)
    assert time.monotonic() - start < 10  # not after the 60 s back-off


def test_version_no_longer_wanted_stops_retrying(start_server, make_base,
                                                 toy_versions):
    base = make_base((1,))
    server = start_server({"toy": base}, poll_interval_s=0.05)
    _copy_slowly_first_part(toy_versions[2], os.path.join(base, "2"))
    _wait_for(lambda: server.manager.status("toy")[-1][2], 10,
              "version 2 was never tried")
    shutil.rmtree(os.path.join(base, "2"))
    _wait_for(lambda: server.manager.status("toy", 2)[0][1] == "END", 10,
              "version 2 is still LOADING")
    assert server.manager.served_versions("toy") == [1]


def _fake_loader(path):
    """A model (no TensorFlow) returning `text` as it is."""
    from gnmt_tf.serving.model_manager import LoadedModel
    from gnmt_tf.serving.protos import meta_graph_pb2

    return LoadedModel({"serving_default": meta_graph_pb2.SignatureDef()},
                       {"serving_default": lambda inputs: dict(inputs)})


def _versions(root, name, versions):
    for v in versions:
        (root / name / str(v)).mkdir(parents=True)
        (root / name / str(v) / "saved_model.pb").write_bytes(b"")
    return str(root / name)


def test_per_model_policies_listeners_and_run_observers(tmp_path):
    import numpy as np

    from gnmt_tf.serving.model_manager import ModelManager

    manager = ModelManager(
        {"a": _versions(tmp_path, "a", (1, 2, 3)),
         "b": _versions(tmp_path, "b", (1, 2, 3))},
        policy=VersionPolicy.parse("latest"),
        policies={"b": VersionPolicy.parse("specific:1,2")},
        poll_interval_s=0, load_fn=_fake_loader)
    changes, runs = [], []
    manager.add_listener(lambda: changes.append(
        (manager.served_versions("a"), manager.served_versions("b"))))
    manager.observe_runs(lambda name, rows: runs.append((name, rows)))
    manager.start()
    # told after each model's scan
    assert changes == [([3], []), ([3], [1, 2])]
    with manager.acquire("b") as sv:
        sv.signatures["serving_default"].run_fn(
            {"text": np.array([b"x", b"y"], object), "k": np.array(2)})
    assert runs == [("b", 2)]
    manager.stop()
    assert changes[-1] == ([], [])
    with pytest.raises(ValueError, match="not served"):
        ModelManager({"a": "/a"}, policies={"c": VersionPolicy()})
