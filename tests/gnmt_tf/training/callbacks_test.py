from gnmt_tf.training.callbacks import DeltaAnnealing
from gnmt_tf.training.schedules import WarmupRsqrtDecay


def test_delta_annealing_schedule():
    callback = DeltaAnnealing(variable=None, start=8.0, end=1.0, anneal_steps=100)
    assert callback.value_at(0) == 8.0
    assert callback.value_at(50) == 4.5
    assert callback.value_at(100) == 1.0 and callback.value_at(10**6) == 1.0


def test_warmup_rsqrt_schedule():
    schedule = WarmupRsqrtDecay(1e-3, warmup_steps=100)
    values = [float(schedule(s)) for s in (0, 49, 99, 399)]
    assert values[0] < values[1] < values[2]
    assert abs(values[2] - 1e-3) < 1e-9
    assert abs(values[3] - 5e-4) < 1e-9


def test_progress_lines_go_to_stderr_as_it_is_when_printed(capsys):
    """The default stream is looked up at each line: `model_zoo.py package
    --exports` imported this module inside a redirection of stderr (the
    CLI's native-log filter), and the next fine-tuning's first progress
    line then failed with "I/O operation on closed file"."""
    import tf_keras as keras

    from gnmt_tf.training.callbacks import ProgressLogger

    model = keras.Sequential([keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    logger = ProgressLogger(every=1)
    logger.set_model(model)
    logger.on_train_begin()
    logger.on_train_batch_end(0, {"loss": 0.5, "target_tokens": 10.0})
    assert capsys.readouterr().err.startswith("step 0  loss 0.5000  ")
