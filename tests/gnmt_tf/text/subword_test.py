import pytest
import tensorflow as tf

from gnmt_tf.text.subword import Subwords, train_sentencepiece


@pytest.fixture(scope="module")
def subwords(tmp_path_factory, toy_corpus):
    sentences = [s for pair in toy_corpus for s in pair]
    prefix = tmp_path_factory.mktemp("spm") / "spm"
    return Subwords(train_sentencepiece(sentences, prefix, 100,
                                        user_defined_symbols=["⟦NUM⟧"]))


def test_special_ids_and_size(subwords):
    assert 40 < subwords.vocabulary_size <= 100
    sp = subwords._sp
    assert [sp.pad_id(), sp.unk_id(), sp.bos_id(), sp.eos_id()] == [0, 1, 2, 3]


def test_in_graph_ids_match_python(subwords):
    sentences = ["A big dog runs.", "Ein kleiner Hund läuft.", "Ein Hund ⟦NUM⟧ spielt."]
    python_ids = subwords.encode(sentences)
    graph_ids = subwords.tf_tokenizer.tokenize(tf.constant(sentences)).to_list()
    assert graph_ids == python_ids
    text = subwords.tf_tokenizer.detokenize(tf.ragged.constant(python_ids))
    assert [t.decode() for t in text.numpy()] == sentences


def test_user_defined_symbol_never_splits(subwords):
    assert "⟦NUM⟧" in subwords.pieces("at ⟦NUM⟧ o'clock")


def test_missing_and_corrupt_model(tmp_path):
    with pytest.raises(FileNotFoundError):
        Subwords(tmp_path / "none.model")
    bad = tmp_path / "bad.model"
    bad.write_bytes(b"not a model")
    with pytest.raises(ValueError, match="not a SentencePiece model"):
        Subwords(bad)


# More distinct characters than a tiny preset's 64 pieces (Multi30k en+de
# has 99): SentencePiece used to stop with "Vocabulary size is smaller than
# required_chars".
RICH_TEXT = ["".join(chr(c) for c in range(start, start + 20)) + " ok"
             for start in range(0x21, 0x21 + 94, 20)] + ["äöüß éèà ñç"]


def test_vocabulary_size_is_raised_to_the_characters(tmp_path, capsys):
    path = train_sentencepiece(RICH_TEXT, tmp_path / "spm", 64)
    assert "vocabulary size raised from 64" in capsys.readouterr().err
    subwords = Subwords(path)
    for sentence in RICH_TEXT:  # every character has a piece: no <unk>
        assert 1 not in subwords.encode([sentence])[0]
    assert path == tmp_path / "spm.model"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spm.model",
                                                          "spm.vocab"]


def test_failed_training_writes_no_files(tmp_path):
    with pytest.raises(ValueError, match="SentencePiece cannot train"):
        train_sentencepiece(["a b"], tmp_path / "spm", 10, model_type="nope")
    assert list(tmp_path.iterdir()) == []


def test_base_character_cap_maps_the_rarest_characters_to_unk(tmp_path):
    from gnmt_tf.cli.main import main
    from gnmt_tf.text.subword import coverage_for_base_characters

    # 12 letters, then 3 ever rarer ones: a cap of 13 (12 + the word
    # boundary) drops exactly the 3 rare ones.
    common = ["abcdef ghijkl " * 3] * 60
    rare = ["abcdef xq", "abcdef xz", "abcdef zw", "abcdef xx"]
    corpus = tmp_path / "text.txt"
    corpus.write_text("\n".join(common + rare) + "\n", encoding="utf-8")
    assert coverage_for_base_characters(common + rare, 100) == 1.0
    for flags, capped in (([], False), (["--max-base-characters", "13"],
                                        True)):
        prefix = tmp_path / f"spm{len(flags)}"
        assert main(["vocab", "--input", str(corpus), "--model-prefix",
                     str(prefix), "--vocab-size", "30", *flags]) == 0
        ids = Subwords(f"{prefix}.model").encode(["q w z"])[0]
        assert (1 in ids) == capped  # 1: <unk>
    # "x" (4 uses) is the most frequent of the rare ones: a cap of 14 keeps it.
    prefix = tmp_path / "spm14"
    assert main(["vocab", "--input", str(corpus), "--model-prefix",
                 str(prefix), "--vocab-size", "30",
                 "--max-base-characters", "14"]) == 0
    subwords = Subwords(f"{prefix}.model")
    assert 1 not in subwords.encode(["x"])[0]
    assert 1 in subwords.encode(["q"])[0]
