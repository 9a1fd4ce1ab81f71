"""The one exception clustersim raises for bad input."""

from clustersim._engine import InputError

__all__ = ["InputError"]
