import numpy as np

from gnmt_tf.pipeline.projection import WordAlignment, word_scores
from gnmt_tf.pipeline.results import SentenceResult


def _result(target, source_pieces, target_pieces, matrix):
    return SentenceResult(target, -0.5, tuple(source_pieces),
                          tuple(target_pieces), np.array(matrix, float))


def test_word_scores_sum_source_pieces_and_average_target_pieces():
    # Source words: "▁ab c" (2 pieces) + "▁d"; target: "▁x" + "▁y z".
    result = _result("x yz", ["▁ab", "c", "▁d", "</s>"], ["▁x", "▁y", "z"],
                     [[0.2, 0.3, 0.4, 0.1],
                      [0.0, 0.0, 1.0, 0.0],
                      [0.5, 0.5, 0.0, 0.0]])
    scores = word_scores(result, source_words=2, target_words=2)
    np.testing.assert_allclose(scores, [[0.5, 0.4], [0.5, 0.5]])


def test_mismatched_pieces_fall_back_to_the_diagonal():
    result = _result("x y", ["▁a", "</s>"], ["▁x", "▁y"],
                     [[1, 0], [1, 0]])
    alignment = WordAlignment("a b", "x y", result)  # 2 words, 1 in pieces
    assert not alignment.aligned
    assert alignment.links == [[0], [1]]
    assert not WordAlignment("a b", "x y").aligned


def test_reordering_alignment_projects_ranges_and_points():
    # "a red car." -> "une voiture rouge." with red<->rouge, car<->voiture.
    result = _result("une voiture rouge.",
                     ["▁a", "▁red", "▁car", ".", "</s>"],
                     ["▁une", "▁voiture", "▁rouge", "."],
                     [[1, 0, 0, 0, 0], [0, 0, 1, 0, 0], [0, 1, 0, 0, 0],
                      [0, 0, 0, 1, 0]])
    alignment = WordAlignment("a red car.", "une voiture rouge.", result)
    assert alignment.aligned
    assert alignment.project_range(2, 5) == (12, 17)  # "rouge", no "."
    assert alignment.project_range(6, 10) == (4, 11)  # "car." -> "voiture"
    assert alignment.project_range(6, 9) == (4, 11)
    assert alignment.project_range(2, 9) == (4, 17)  # hull
    assert alignment.project_range(0, 10) == (0, 18)  # whole sentence
    assert alignment.project_point(6) == 4  # before "car": before voiture
    assert alignment.project_point(9) == 11  # "car|." : after voiture
    assert alignment.project_point(10) == 18


def test_unaligned_source_word_takes_its_best_column():
    # No target row picks "b": it is linked through its column's argmax.
    result = _result("x y", ["▁a", "▁b"], ["▁x", "▁y"],
                     [[0.9, 0.1], [0.6, 0.4]])
    alignment = WordAlignment("a b", "x y", result)
    assert alignment.links == [[0, 1], [1]]


def test_empty_texts():
    alignment = WordAlignment("", "", None)
    assert alignment.project_range(0, 0) is None
    assert alignment.project_point(0) == 0
    assert WordAlignment("a", "", None).project_range(0, 1) is None
