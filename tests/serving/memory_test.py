import os
import threading

import numpy as np
import pytest

from gnmt_tf.serving.memory import can_release_memory
from gnmt_tf.serving.memory import release_free_memory


def _rss_mb():
    with open(f"/proc/{os.getpid()}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    pytest.skip("no /proc/self/status")


@pytest.mark.skipif(not can_release_memory(), reason="needs glibc")
def test_freed_memory_goes_back_to_the_os():
    kept = []

    def allocate():  # 256 MB in a thread's arena, its top block kept alive
        blocks = [np.ones(8192) for _ in range(4096)]
        kept.append(blocks[-1])

    thread = threading.Thread(target=allocate)
    thread.start()
    thread.join()
    freed = _rss_mb()
    assert release_free_memory()
    assert freed - _rss_mb() > 150, "the 256 MB freed stayed in the RSS"
    assert kept[0].sum() == 8192


def test_live_tensorflow_resources_survive(tmp_path):
    """An eagerly created TF Text tokenizer (as in-process translators and
    loaded models hold) still works after memory is released."""
    import sentencepiece as spm
    import tensorflow_text

    text = tmp_path / "corpus.txt"
    text.write_text("".join(f"a dog runs {i} times\n" for i in range(50)))
    spm.SentencePieceTrainer.train(input=str(text), model_prefix=str(
        tmp_path / "spm"), vocab_size=30, minloglevel=2)
    tokenizer = tensorflow_text.SentencepieceTokenizer(
        (tmp_path / "spm.model").read_bytes())
    before = tokenizer.tokenize(["a dog runs"]).to_list()
    tokenizer.tokenize(["warm"])  # the kernel (and its resource) is cached
    release_free_memory()
    assert tokenizer.tokenize(["a dog runs"]).to_list() == before
