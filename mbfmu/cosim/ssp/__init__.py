"""SSP 1.0 system structure packages: reading and writing whole systems
(:mod:`.read_write`), with their parameter bindings, unit conversions,
nested systems and the sources (FMUs) they name."""
