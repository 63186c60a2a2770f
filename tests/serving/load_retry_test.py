import pytest

from gnmt_tf.serving.load_retry import LoadRetry
from gnmt_tf.serving.load_retry import folder_fingerprint


def test_back_off_doubles_up_to_the_maximum():
    retry = LoadRetry(initial_s=1.0, max_s=5.0)
    files, delays, now = ("a",), [], 0.0
    for _ in range(5):
        assert retry.should_try(files, now)
        retry.started(files)
        delays.append(retry.failed(now))
        assert not retry.should_try(files, now + delays[-1] - 0.01)
        now += delays[-1]
    assert delays == [1.0, 2.0, 4.0, 5.0, 5.0]
    assert retry.attempts == 5


def test_changed_files_are_tried_once_they_have_settled():
    retry = LoadRetry(initial_s=100.0, max_s=1000.0)
    assert retry.should_try(("pb",), 0.0)
    retry.started(("pb",))
    retry.failed(0.0)
    assert not retry.should_try(("pb",), 1.0)
    assert not retry.should_try(("pb", "vars 1"), 2.0)  # still changing
    assert not retry.should_try(("pb", "vars 2"), 3.0)
    assert retry.should_try(("pb", "vars 2"), 4.0)      # settled
    retry.started(("pb", "vars 2"))
    assert retry.failed(4.0) == 100.0                   # fresh back-off


def test_max_attempts_gives_up_until_the_files_change():
    retry = LoadRetry(initial_s=0.0, max_attempts=2)
    for _ in range(2):
        assert retry.should_try(("a",), 0.0)
        retry.started(("a",))
        delay = retry.failed(0.0)
    assert delay is None and retry.gave_up
    assert not retry.should_try(("a",), 1e9)
    assert not retry.should_try(("b",), 1e9)  # changed, not settled yet
    assert retry.should_try(("b",), 1e9)


def test_folder_fingerprint(tmp_path):
    assert folder_fingerprint(str(tmp_path / "missing")) == ()
    (tmp_path / "saved_model.pb").write_bytes(b"x")
    first = folder_fingerprint(str(tmp_path))
    assert [e[:2] for e in first] == [("saved_model.pb", 1)]
    (tmp_path / "variables").mkdir()
    (tmp_path / "variables" / "variables.index").write_bytes(b"yy")
    second = folder_fingerprint(str(tmp_path))
    assert second != first
    assert {e[0] for e in second} == {
        "saved_model.pb", "variables", "variables/variables.index"}
    assert folder_fingerprint(str(tmp_path)) == second


@pytest.mark.parametrize("initial, maximum", [(0.5, 0.5), (2.0, 60.0)])
def test_first_delay_is_initial(initial, maximum):
    retry = LoadRetry(initial, maximum)
    retry.should_try((), 0.0)
    retry.started(())
    assert retry.failed(0.0) == initial
