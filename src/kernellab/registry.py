"""One registry pattern for everything kernellab lists by name: agent adapters, strategies, kernel
templates. A class registers itself with a decorator carrying an explicit name; the CLI lists the
registry. The module imports nothing of kernellab, so every layer may use it (``.importlinter``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")
V = TypeVar("V")


class Registry(Generic[T, V]):
    """Names → entries. ``make`` turns a decorated class into what is stored (the class itself, or an
    instance for stateless singletons such as templates); ``builtins`` is the package whose import
    registers the built-in entries, imported on first listing so the registry is never seen half full.
    """

    def __init__(self, kind: str, builtins: str, make: Callable[[type[T]], V] = lambda cls: cls) -> None:
        self.kind, self.builtins, self.make = kind, builtins, make
        self._entries: dict[str, V] = {}
        self._classes: dict[str, type[T]] = {}

    def register(self, name: str) -> Callable[[type[T]], type[T]]:
        def decorate(cls: type[T]) -> type[T]:
            if name in self._classes and self._classes[name] is not cls:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            cls.name = name  # type: ignore[attr-defined]
            self._classes[name] = cls
            self._entries[name] = self.make(cls)
            return cls

        return decorate

    def entries(self) -> dict[str, V]:
        """Every entry, sorted by name."""
        importlib.import_module(self.builtins)
        return dict(sorted(self._entries.items()))
