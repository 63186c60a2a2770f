"""Learning-rate schedules."""

import tensorflow as tf
import tf_keras as keras


class WarmupRsqrtDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warm-up to `peak` over `warmup_steps`, then peak * sqrt(warmup/step)."""

    def __init__(self, peak, warmup_steps):
        self.peak = peak
        self.warmup_steps = warmup_steps

    def __call__(self, step):
        step = tf.cast(step, tf.float32) + 1.0
        warmup = tf.cast(max(self.warmup_steps, 1), tf.float32)
        return self.peak * tf.minimum(step / warmup, tf.math.rsqrt(step / warmup))

    def get_config(self):
        return {"peak": self.peak, "warmup_steps": self.warmup_steps}
