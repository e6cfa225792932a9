"""FMUs run in a worker process of their own (:mod:`.proxy`, :mod:`.worker`),
so that a crashing or hanging FMU cannot take the master with it."""
