"""Sign-in with a limit on failed attempts per client address and user name."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.views import LoginView
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse


def _key(request: HttpRequest) -> str:
    username = str(request.POST.get("username", "")).strip().lower()[:150]
    return f"login-failures:{request.META.get('REMOTE_ADDR', '')}:{username}"


class RateLimitedLoginView(LoginView):
    """After LOGIN_FAILURE_LIMIT failed sign-ins for one address and user name within LOGIN_FAILURE_WINDOW_S
    seconds, answer 429 (without checking the password) until the window has passed. A success clears the
    count. Keyed on both so one attacker cannot lock a user out from everywhere."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if cache.get(_key(request), 0) >= settings.LOGIN_FAILURE_LIMIT:
            minutes = max(1, settings.LOGIN_FAILURE_WINDOW_S // 60)
            message = (
                f"Too many failed sign-ins for this user from your address. Try again in {minutes} minute(s)."
            )
            response = HttpResponse(message, status=429, content_type="text/plain; charset=utf-8")
            response["Retry-After"] = str(settings.LOGIN_FAILURE_WINDOW_S)
            return response
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form: Any) -> HttpResponse:
        key = _key(self.request)
        if not cache.add(key, 1, timeout=settings.LOGIN_FAILURE_WINDOW_S):
            try:
                cache.incr(key)
            except ValueError:  # expired between add and incr
                cache.add(key, 1, timeout=settings.LOGIN_FAILURE_WINDOW_S)
        return super().form_invalid(form)

    def form_valid(self, form: Any) -> HttpResponse:
        cache.delete(_key(self.request))
        return super().form_valid(form)
