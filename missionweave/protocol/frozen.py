"""``replace`` for the core's frozen aggregates, at a fraction of ``dataclasses.replace``'s cost.

Every event an aggregate folds (``evolve``) makes a changed copy of a frozen dataclass, a
WorkItem of some forty fields several times per command. ``dataclasses.replace`` collects
every field into keyword arguments and calls ``__init__``, which sets them one by one again:
a sixth of a sweep's CPU went there (docs/benchmarks.md, "Where the time goes"). For a
dataclass whose fields all go through ``__init__`` unchanged (no ``__post_init__``, no
``init=False`` field, which is what the core's aggregates are) the copy is the same object
built directly; anything else goes to ``dataclasses.replace``.
"""

from __future__ import annotations

import dataclasses
from functools import cache
from typing import Any

_set = object.__setattr__


def replace[T](obj: T, /, **changes: Any) -> T:
    """``dataclasses.replace(obj, **changes)``, the same result and the same ``TypeError``
    for a name that is not a field."""
    cls = type(obj)
    names = _plain_fields(cls)
    if names is None:
        return dataclasses.replace(obj, **changes)  # type: ignore[type-var]
    if not changes.keys() <= names:
        unknown = ", ".join(sorted(changes.keys() - names))
        raise TypeError(f"{cls.__name__}.__init__() got an unexpected keyword argument {unknown}")
    new = object.__new__(cls)
    for name in names:
        _set(new, name, changes[name] if name in changes else getattr(obj, name))
    return new


@cache
def _plain_fields(cls: type) -> frozenset[str] | None:
    """The field names of ``cls`` when a copy can skip ``__init__``; ``None`` otherwise."""
    if not dataclasses.is_dataclass(cls) or hasattr(cls, "__post_init__"):
        return None
    fields = dataclasses.fields(cls)
    if any(not field.init for field in fields):
        return None
    return frozenset(field.name for field in fields)
