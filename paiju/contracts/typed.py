"""The base of the typed JSON contracts (msgspec Structs): one definition per message or
stored record, shared by whoever writes it and whoever reads it.

A writer builds the value and calls :meth:`Contract.encode`; a reader calls
:meth:`Contract.decode` and gets the same type back, checked: a value that is not JSON, not
an object, lacks a required key or holds a value of the wrong type (``true`` for a number, a
string for a number, ...) is :class:`BadContract`, a ``ValueError`` naming the type and the
place. Keys the type does not know are ignored, so a newer writer may add one while older
readers run (a rolling release mixes versions); renaming or retyping a key is not
compatible."""

from __future__ import annotations

from typing import Any, ClassVar, Self

import msgspec


class BadContract(ValueError):
    """A message or stored entry that does not decode into its contract's type."""


_ENCODER = msgspec.json.Encoder()


class Contract(msgspec.Struct, frozen=True, kw_only=True):
    """A typed JSON value: frozen (a change is :meth:`replace`), encoded with every field
    (readers of older versions look keys up by name), except that a type declared
    ``omit_defaults=True`` leaves out its optional fields while they are unset."""

    _decoder: ClassVar[Any] = None

    def encode(self) -> bytes:
        return _ENCODER.encode(self)

    @classmethod
    def decode(cls, raw: bytes | str) -> Self:
        decoder = cls.__dict__.get("_decoder")
        if decoder is None:
            decoder = msgspec.json.Decoder(cls)
            cls._decoder = decoder
        try:
            value: Self = decoder.decode(raw)
        except msgspec.DecodeError as exc:   # ValidationError included
            raise BadContract(f"{cls.__name__}: {exc}") from None
        return value

    def replace(self, **changes: Any) -> Self:
        """A copy with ``changes`` (field names) applied."""
        return msgspec.structs.replace(self, **changes)
