"""The package version (one place: the package and its checkpoints read it)."""

__version__ = "0.1.0"
