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
