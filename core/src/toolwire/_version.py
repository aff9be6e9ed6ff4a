"""The distribution's version, in the lowest layer so any module may read it."""

__version__ = "0.1.0"
