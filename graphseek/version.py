"""The graphseek version (its own module, so any module can read it without importing the package's
lazy exports)."""

__version__ = "0.1.0"
