"""The distribution's version (hatch reads it here; the package and its halves import it)."""

__version__ = "0.1.0"
