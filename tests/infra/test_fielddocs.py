"""infra/fielddocs.py: the docstrings under a model's fields, read when asked (as pydantic's
``use_attribute_docstrings`` read them when the class was made)."""

from __future__ import annotations

from pydantic import BaseModel

from infra.events.config import EventsConfig, TriggerRules
from infra.fielddocs import field_docs
from infra.settings import Settings


class Base(BaseModel):
    size: int = 1
    """How big.

    Over two lines."""
    plain: str = ""
    kept: bool = True
    """Kept."""


class Derived(Base):
    kept: bool = False
    """Kept, said again."""
    extra: int = 0
    "One line."


def test_the_docstrings_under_fields_and_their_bases():
    assert field_docs(Derived) == {"size": "How big.\n\nOver two lines.", "kept": "Kept, said again.",
                                   "extra": "One line."}
    assert "plain" not in field_docs(Base)


def test_they_are_what_pydantic_reads_for_every_setting():
    # (pydantic's own reader, behind use_attribute_docstrings: private, so only this test uses it)
    from pydantic._internal._docs_extraction import extract_docstrings_from_cls

    for cls in (Settings, EventsConfig, TriggerRules):
        assert field_docs(cls) == extract_docstrings_from_cls(cls, use_inspect=True)
        assert set(field_docs(cls)) >= set(cls.model_fields) - {"settings"}  # (every setting has one)
