"""A text field's length limit holds for the text as the client sent it, as the OpenAPI schema states it.

DRF's CharField strips surrounding whitespace (``trim_whitespace``, on by default) before its
MaxLengthValidator runs, so a design name of 201 characters with a leading space was saved as 200: a body the
schema (``maxLength: 200``) calls invalid was accepted (schemathesis ST201, found by the fuzz). A schema
cannot say "after trimming", and a client that reads it checks the text it sends. ``install`` (called once,
when the project app is ready) makes every CharField, its subclasses (slug, e-mail, URL) and the fields
ModelSerializer builds for a model's CharField refuse such a text with DRF's own message, before trimming;
trimming and every other check are as before.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers
from rest_framework.fields import empty

_INSTALLED = "_clusterdesigner_limit_as_sent"


def install() -> None:
    """Hold ``max_length`` to the text as sent for every DRF CharField (idempotent)."""
    field_class = serializers.CharField
    if getattr(field_class, _INSTALLED, False):
        return
    drf_run_validation = field_class.run_validation

    def run_validation(self: serializers.CharField, data: Any = empty) -> Any:
        if isinstance(data, str) and self.max_length is not None and len(data) > self.max_length:
            self.fail("max_length", max_length=self.max_length)
        return drf_run_validation(self, data)

    setattr(field_class, "run_validation", run_validation)  # noqa: B010 (a method, which mypy will not let be assigned)
    setattr(field_class, _INSTALLED, True)
