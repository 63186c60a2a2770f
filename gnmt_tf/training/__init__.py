"""Losses, schedules, callbacks and the model.fit-based trainer."""
