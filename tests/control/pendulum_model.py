"""A model file for the CLI tests (``mbfmu linearize path/to/file.py``)."""
from ctl_plants import Pendulum as PLANT  # noqa: F401
