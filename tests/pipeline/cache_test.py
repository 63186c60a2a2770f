import pytest

from gnmt_tf.pipeline.cache import ENTRY_OVERHEAD
from gnmt_tf.pipeline.cache import Task
from gnmt_tf.pipeline.cache import TranslationCache


def test_keyed_by_text_task_and_model_version():
    cache = TranslationCache(max_mb=1)
    cache.put("Hallo.", Task("de", "en", ("news",)), "v1", "Hello.")
    assert cache.get("Hallo.", Task("de", "en", ("news",)), "v1") == "Hello."
    assert cache.get("Hallo.", Task("de", "fr", ("news",)), "v1") is None
    assert cache.get("Hallo.", Task("de", "en"), "v1") is None
    assert cache.get("Hallo.", Task("de", "en", ("news",)), "v2") is None
    assert cache.get("Hallo!", Task("de", "en", ("news",)), "v1") is None
    assert (cache.hits, cache.misses) == (1, 4)


def test_tags_are_a_set():
    assert Task("de", "en", ("b", "a", "a")) == Task("de", "en", ("a", "b"))


def test_size_limit_evicts_least_recently_used():
    cache = TranslationCache(max_mb=0.001)  # 1000 bytes
    task = Task("de", "en")
    for i in range(10):
        cache.put(f"Satz {i}", task, "v1", "x" * 100)
    assert cache.size_bytes <= 1000
    assert cache.get("Satz 9", task, "v1") == "x" * 100
    assert cache.get("Satz 0", task, "v1") is None
    cache.put("huge", task, "v1", "x" * 2000)  # larger than the cache
    assert cache.get("huge", task, "v1") is None
    assert len(cache) * (ENTRY_OVERHEAD + 100) <= 1000


def test_recently_used_is_kept():
    cache = TranslationCache(max_mb=0.001)
    task = Task("de", "en")
    cache.put("a", task, "v", "x" * 250)
    cache.put("b", task, "v", "x" * 250)
    cache.get("a", task, "v")
    cache.put("c", task, "v", "x" * 250)
    assert cache.get("a", task, "v") and cache.get("b", task, "v") is None


@pytest.mark.parametrize("size", [0, -1])
def test_bad_size(size):
    with pytest.raises(ValueError, match="max_mb"):
        TranslationCache(size)
