"""The co-simulation master: :func:`~mbfmu.cosim.master.run.simulate` and the
step loops it drives (fixed, adaptive, iterative, the compiled fast loop), with
its options, algebraic-loop solver, pacing and guards."""
