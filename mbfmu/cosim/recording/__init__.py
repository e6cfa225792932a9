"""What a run leaves: :class:`~mbfmu.cosim.recording.result.Result`, its files
(written and read back, checked as data from others) and their output paths."""
