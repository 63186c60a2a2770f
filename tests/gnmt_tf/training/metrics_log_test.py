import pytest

from gnmt_tf.training.metrics_log import MetricRow, MetricsLog, read_metrics


def test_rows_survive_a_new_log_and_resume_truncates(tmp_path):
    log = MetricsLog(tmp_path / "metrics.csv")
    log.append(10, "train", {"loss": 4.0, "learning_rate": 1e-3})
    log.append(10, "validation", {"loss": 3.5})
    log.append(20, "validation", {"loss": 3.0})
    # A run killed after step 20 but resumed from the step-10 checkpoint.
    resumed = MetricsLog(tmp_path)
    assert len(resumed.rows) == 4
    resumed.truncate_after(10)
    resumed.append(20, "validation", {"loss": 2.9})
    assert read_metrics(tmp_path) == [
        MetricRow(10, "train", "loss", 4.0),
        MetricRow(10, "train", "learning_rate", 1e-3),
        MetricRow(10, "validation", "loss", 3.5),
        MetricRow(20, "validation", "loss", 2.9)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["metrics.csv"]


def test_missing_and_foreign_files(tmp_path):
    assert read_metrics(tmp_path) == []
    (tmp_path / "metrics.csv").write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="expected the columns step,split"):
        read_metrics(tmp_path)
    (tmp_path / "metrics.csv").write_text("step,split,metric,value\nx,a,b,1\n")
    with pytest.raises(ValueError, match="line 2"):
        read_metrics(tmp_path)
