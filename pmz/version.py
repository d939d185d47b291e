"""The version of pmz (one place: the package and every result read it)."""

__version__ = "0.1.0"
