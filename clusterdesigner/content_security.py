"""django-csp's middleware, with the policy built once per process where nothing varies it per response.

django-csp builds both headers (the policy and the report-only one) from the settings on every response:
copying each directive, converting the policy's parts to a dict with ``dataclasses.asdict`` and joining the
strings again, about a tenth of a cached API answer's CPU (bench/load_profile.py --profile catalog-list).
The project sends one fixed policy: no nonce and no per-view ``csp_update``/``csp_replace``/``csp_exempt``.
So where a response carries none of those and the request asked for no nonce, the header text is the one
django-csp built for the first such response (the same text: built by django-csp's own function from the
same settings), and the rules for whether to send it are django-csp's. Anything else takes django-csp's own
path, unchanged. A change to the CSP settings (a test's ``override_settings``) forgets the built text.
"""

from __future__ import annotations

import functools
from typing import Any

from csp.constants import HEADER, HEADER_REPORT_ONLY
from csp.middleware import CheckableLazyObject
from csp.middleware import CSPMiddleware as DjangoCSPMiddleware
from csp.utils import build_policy
from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponseBase

# What a view or decorator sets on a response to vary its policy (django-csp's decorators and
# get_policy_parts read these): such a response takes django-csp's own path.
_PER_RESPONSE = tuple(
    f"_csp_{what}{suffix}" for what in ("config", "update", "replace") for suffix in ("", "_ro")
)
_DEBUG_EXEMPT = (500, 404)  # django-csp leaves Django's debug pages' headers alone


@functools.cache
def _policies() -> tuple[tuple[str, str, str, tuple[str, ...]], ...]:
    """(header, its text, the response attribute exempting it, the path prefixes excluded) for the policy and
    the report-only one, as django-csp builds them with no per-response parts and no nonce."""
    rows = []
    for header, setting, exempt, report_only in (
        (HEADER, "CONTENT_SECURITY_POLICY", "_csp_exempt", False),
        (HEADER_REPORT_ONLY, "CONTENT_SECURITY_POLICY_REPORT_ONLY", "_csp_exempt_ro", True),
    ):
        policy = getattr(settings, setting, None) or {}
        prefixes = tuple(policy.get("EXCLUDE_URL_PREFIXES", None) or ())
        rows.append((header, build_policy(report_only=report_only), exempt, prefixes))
    return tuple(rows)


@receiver(setting_changed)
def _forget_policies(*, setting: str, **kwargs: Any) -> None:
    if setting.startswith("CONTENT_SECURITY_POLICY"):
        _policies.cache_clear()


class CSPMiddleware(DjangoCSPMiddleware):
    """django-csp's CSPMiddleware; a response with no per-response policy parts and no nonce gets the policy
    text built once (see the module's docstring)."""

    def process_response(self, request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
        if (
            getattr(request, "_csp_nonce", None) is not None
            or any(getattr(response, name, None) is not None for name in _PER_RESPONSE)
            or (response.status_code in _DEBUG_EXEMPT and settings.DEBUG)
        ):
            return super().process_response(request, response)
        for header, policy, exempt, prefixes in _policies():
            if (
                policy
                and header not in response
                and getattr(response, exempt, False) is False
                and not request.path_info.startswith(prefixes)
            ):
                response[header] = policy
        # As django-csp does: a template asking for a nonce after the header was written is an error.
        request.csp_nonce = CheckableLazyObject(self._csp_nonce_post_response)  # type: ignore[attr-defined]
        return response
