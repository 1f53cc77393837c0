"""The one network gateway: every connection the product opens is opened here (`tests/test_architecture.py` fails
on a socket, `asyncio` connection, `urllib`, `http.client`, `httpx`, `requests`, `openai` client or OpenTelemetry
exporter made in another module of `server/` or `runtime/`).

Two kinds of place are ever contacted, and only by a run (or a replay asked to trace):

- `model_client`: a model endpoint the host configuration names (`[models.NAME] base_url`; the OpenAI endpoint
  without one), over http or https. A redirect is not followed: an endpoint that answers with one is an error,
  never a request to where it points.
- `post_spans` and `collector_exporter`: the telemetry collector, the user's own (`OTEL_EXPORTER_OTLP_*`,
  with the user's headers and certificates) or, when the environment names none, the workspace's (`[telemetry]
  otlp_endpoint`, sent nothing but the spans; `runs/tracing.py` decides which). No redirect is followed either.

Nothing else connects: the checker and the editor features read files only, review runs offline, grading
resolves no remote `$ref` (`server/oscova_lsp/runs/grading.py`), git runs with no transport allowed
(`processes.git`).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

SCHEMES = ("http", "https")


class EndpointRefused(ValueError):
    """An address the gateway does not connect to; the message is a sentence."""


def checked_url(url: str, what: str) -> str:
    """`url` when it is an http or https address with a host; EndpointRefused otherwise. `what`: how the sentence
    names it (`[models.default] base_url`)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        parts = None
    if parts is None or parts.scheme.lower() not in SCHEMES or not parts.hostname:
        raise EndpointRefused(f"{what} is {url!r}, not an http:// or https:// address: nothing is sent there")
    return url


def model_client(openai: Any, *, base_url: str | None, api_key: str, timeout: float, max_retries: int,
                 verify: Any, what: str, transport: Any = None) -> Any:
    """The OpenAI-compatible client of one configured model endpoint (`what` names its setting in sentences):
    `openai` is the library, which only the model client imports (`chat_client.py`); `verify` its TLS settings.
    Redirects are not followed. `transport`: an in-process transport that answers instead of the network (the
    offline model's): nothing connects."""
    if base_url is not None:
        checked_url(base_url, what)
    extra = {"transport": transport} if transport is not None else {}
    return openai.AsyncOpenAI(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries,
                              http_client=openai.DefaultAsyncHttpxClient(verify=verify, timeout=timeout,
                                                                         follow_redirects=False, **extra))


def post_spans(url: str, body: bytes, *, timeout: float) -> None:
    """POSTs encoded spans (OTLP/HTTP protobuf) to the workspace's collector with nothing of the user's: no header
    but the content type, no `.netrc`, no redirect followed. Raises OSError (urllib's errors) or EndpointRefused."""
    import urllib.request

    checked_url(url, "the collector's address")

    class _NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None  # the 3xx answer is an error: nowhere else is contacted

    opener = urllib.request.build_opener(_NoRedirect)
    request = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/x-protobuf"})
    with opener.open(request, timeout=timeout) as answer:
        answer.read()


def collector_exporter(url: str, *, timeout: float) -> Any:
    """The OTLP/HTTP exporter of the user's own collector (the environment named it): the exporter reads the
    user's headers and certificates from the environment itself."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter(endpoint=url, timeout=timeout)
