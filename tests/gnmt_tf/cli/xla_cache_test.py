"""`gnmt-tf translate --xla` keeps the compiled search on disk
(`gnmt_tf.xla_cache`): a second process loads it instead of compiling, and
translates the same."""

import os
import subprocess
import sys


def _translate(model_dir, source, env):
    result = subprocess.run(
        [sys.executable, "-m", "gnmt_tf.cli.main", "translate", "--model",
         str(model_dir), "--xla", "--beam-size", "2", "--input", str(source)],
        env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def test_a_second_process_loads_the_compiled_search(tiny_model_dir,
                                                    tmp_path):
    cache = tmp_path / "cache"
    env = dict(os.environ, GNMT_TF_XLA_CACHE=str(cache),
               TF_CPP_MIN_LOG_LEVEL="3")
    env.pop("TF_XLA_FLAGS", None)
    source = tmp_path / "in.txt"
    source.write_text("A big dog runs.\nA small cat eats.\n", encoding="utf-8")
    first = _translate(tiny_model_dir, source, env)
    written = sorted(p.name for p in cache.iterdir())
    assert written, "nothing compiled was kept"
    assert _translate(tiny_model_dir, source, env) == first
    # Loaded, not compiled again: a new program would be a new file.
    assert sorted(p.name for p in cache.iterdir()) == written


def test_cache_settings(tmp_path, monkeypatch):
    from gnmt_tf import xla_cache

    monkeypatch.setenv(xla_cache.CACHE_ENV, "off")
    assert xla_cache.cache_dir() is None
    monkeypatch.setenv(xla_cache.CACHE_ENV, str(tmp_path))
    assert xla_cache.cache_dir() == tmp_path
    # TensorFlow is loaded in this process: too late.
    import tensorflow  # noqa: F401

    monkeypatch.delenv("TF_XLA_FLAGS", raising=False)
    assert xla_cache.enable() is None
    assert "TF_XLA_FLAGS" not in os.environ
    # The user's own cache flag is left alone.
    monkeypatch.setenv("TF_XLA_FLAGS",
                       "--tf_xla_persistent_cache_directory=/elsewhere")
    assert xla_cache.enable() is None


def test_off_keeps_nothing(tiny_model_dir, tmp_path):
    env = dict(os.environ, GNMT_TF_XLA_CACHE="off", TF_CPP_MIN_LOG_LEVEL="3",
               HOME=str(tmp_path))
    env.pop("TF_XLA_FLAGS", None)
    source = tmp_path / "in.txt"
    source.write_text("A big dog runs.\n", encoding="utf-8")
    _translate(tiny_model_dir, source, env)
    assert not (tmp_path / ".cache" / "gnmt_tf" / "xla").exists()
