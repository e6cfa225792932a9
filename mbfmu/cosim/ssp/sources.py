"""Where the files an SSP system names may be: inside it, unless the user says otherwise.

A component's ``source`` (the FMU) and a ``ParameterBinding``'s ``source``
(an ``.ssv`` file) are resolved against the system's root: the extracted
``.ssp`` archive, or the folder of an ``.ssd`` file. A reference that
resolves outside the root (``../../outside/x.fmu``, an absolute path, a
``file:`` URI, a symbolic link leading out) is refused by name, before the
file is opened, so an SSP from someone else can neither run an FMU kept
elsewhere nor read a local file (nor echo its content in an error).
``allow_external=True`` (``mbfmu simulate --allow-external``) accepts such
references, for users who keep the FMUs beside their ``.ssd``; a relative
reference leaving an ``.ssp`` archive is then taken from the archive's own
folder, as if the archive were unpacked there.
"""
from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, urlparse

from ...errors import CosimError


class SourceResolver:
    """Turns the ``source`` attributes of one system into checked paths.

    Parameters
    ----------
    root : Path
        The extracted archive, or the ``.ssd``'s folder.
    name : str
        The SSP file, as messages name it.
    allow_external : bool
        Accept references that resolve outside ``root``.
    unpacked_in : Path, optional
        For an archive extracted into ``root``: the folder holding the
        archive, where relative references leaving it are taken from.
    """

    def __init__(self, root: Path, name: str, allow_external: bool = False, unpacked_in: Path | None = None) -> None:
        self.root = Path(root).resolve()
        self.name = name
        self.allow_external = bool(allow_external)
        self.unpacked_in = Path(unpacked_in).resolve() if unpacked_in is not None else self.root

    def resolve(self, source: str | None, what: str) -> Path:
        """The file ``source`` (named ``what`` in messages) refers to.

        Raises
        ------
        CosimError
            ``source`` is missing, has a scheme other than ``file:``, resolves
            outside the root without ``allow_external``, or does not exist.
        """
        if not source:
            raise CosimError(f"{self.name}: {what} has no source")
        text = str(source)
        parsed = urlparse(text)
        if parsed.scheme == "file":
            target, external = Path(unquote(parsed.path)), True
        elif parsed.scheme and len(parsed.scheme) > 1:  # "c:" is a drive, not a scheme
            raise CosimError(f"{self.name}: {what} source {text!r}: only files are supported, not {parsed.scheme}: URIs")
        else:
            target = Path(unquote(text))
            external = target.is_absolute() or os.path.isabs(text)
        resolved = (target if external else self.root / target).resolve()
        outside = resolved != self.root and self.root not in resolved.parents
        if (external or outside) and not self.allow_external:
            raise CosimError(f"{self.name}: {what} source {text!r} is outside the system's folder; refused "
                             "(pass allow_external=True, or --allow-external, to use files outside it)")
        if outside and not external:
            resolved = (self.unpacked_in / target).resolve()
        if not resolved.is_file():
            raise CosimError(f"{self.name}: {what} source {text!r} not found")
        return resolved
