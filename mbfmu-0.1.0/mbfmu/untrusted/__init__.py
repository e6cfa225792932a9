"""Reading files from others without trusting them (see the docs' "Security model").

Results, SSP archives, URDFs, sweep caches and serialized states are data:
reading one never runs code, reads outside its folder, or allocates without
a bound. This package holds what every layer uses for that, standard library
only, so that each layer may import it:

* :mod:`.limits`: the bounds on archive expansion and on allocations, and how
  to change them (:func:`~.limits.set_limits`, environment variables);
* :mod:`.archive`: the one way mbfmu opens a zip archive (FMU, SSP, ``.npz``):
  members contained, declared sizes and compression ratios checked before
  anything is extracted, the partial folder removed on every failure;
* :mod:`.scratch`: private temporary folders (``mkdtemp``), marked with their
  owner process, removed at exit, and those of dead processes removed later.
"""
from __future__ import annotations

from .limits import Limits, set_limits

__all__ = ["Limits", "set_limits"]
