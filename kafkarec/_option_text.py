"""Options given as text, as Spark gives them (the data source's, ``from_avro``'s and
``from_protobuf``'s): one rule for their names and one for their booleans, used by the decoders
here and by ``spark_udfs``: one rule each for their names, their booleans and their choices."""
from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

__all__ = ["lower_keys", "text_bool", "text_choice"]


def lower_keys(options: Optional[Mapping[Any, Any]], *, drop_none: bool = False) -> dict:
    """Options with lower-case names (Spark's option names are case-insensitive); with
    ``drop_none``, options set to None are left out."""
    return {str(k).lower(): v for k, v in dict(options or {}).items() if not (drop_none and v is None)}


def text_bool(name: str, value: Any, error: type = ValueError) -> bool:
    """Spark's rule for a boolean option (Scala's ``toBoolean``): ``true`` or ``false`` in any case,
    anything else is ``error`` naming the option."""
    s = str(value).strip().lower()
    if s in ("true", "false"):
        return s == "true"
    raise error(f"option {name} must be true or false, got {value!r}")


def text_choice(name: str, value: Any, accepted: Sequence[str], *, default: Optional[str] = None,
                upper: bool = False, template: str = "{name} must be one of {accepted}, not {value!r}"):
    """One of ``accepted`` (any case; ``upper``: given in upper case), ``default`` when unset or
    blank; anything else is a ValueError naming the option and what it accepts (``template``
    keeps the wording each option's error had)."""
    if value is None or str(value).strip() == "":
        return default
    text = str(value).strip()
    text = text.upper() if upper else text.lower()
    if text not in accepted:
        raise ValueError(template.format(name=name, accepted=", ".join(accepted), value=value))
    return text
