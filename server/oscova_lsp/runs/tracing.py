"""OpenTelemetry spans of runs, following the GenAI semantic conventions, exported over OTLP/HTTP.

Where spans go (`collector`): the user's environment wins over the workspace. `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`
(the traces URL as given), else `OTEL_EXPORTER_OTLP_ENDPOINT` (a base URL), else `[telemetry] otlp_endpoint` of
`oscova.toml`; `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none` turn tracing off whatever the workspace
says. The environment's credentials (`OTEL_EXPORTER_OTLP_*HEADERS`, client certificates, a credential provider)
go only to a collector the environment named: a collector named by the workspace gets the spans over a bare
exporter that sends none of them, and the first export to one says so once (`notify`). Without a collector
nothing here imports OpenTelemetry. It is an optional extra (`pip install 'oscova-lsp[otel]'`): configured but
not installed, one warning is logged and runs go on untraced.

A run is a tree of spans: `invoke_agent {agent}` (INTERNAL), under it `chat {model}` (CLIENT) per model
call and `execute_tool {tool}` (INTERNAL) per tool execution; an agent used as a tool is an
`invoke_agent` span under its `execute_tool` span. Every attribute value passes the run's `Redactor`;
message contents, tool arguments and results are added only with `[telemetry] capture_content = true`.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from oscova_runtime.host_config import HostConfig
from oscova_runtime.messages import (
    ChatMessage,
    DataContent,
    FunctionCallContent,
    FunctionResultContent,
    ReasoningContent,
    TextContent,
)
from oscova_runtime.telemetry import ObservedCall

from .events import Redactor, jsonable

log = logging.getLogger(__name__)

ENDPOINT_VARIABLE = "OTEL_EXPORTER_OTLP_ENDPOINT"
TRACES_ENDPOINT_VARIABLE = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
HEADERS_VARIABLES = ("OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS")
WORKSPACE_SETTING = "[telemetry] otlp_endpoint"
TRACES_PATH = "/v1/traces"
EXPORT_TIMEOUT = 5.0
"""Seconds an export may take: a collector that is down must not hold up the end of the process long."""
SCHEDULE_DELAY_MS = 500
"""Spans of a finished run reach the collector within about this long (the batch processor's period)."""
INSTRUMENTATION = "oscova-lsp"
_STATE = "otel"

_providers: dict[Collector, Any] = {}
"""One tracer provider (exporter, batch thread) per collector, for the life of the process."""
_announced: set[str] = set()
"""Workspace-named collectors the process has said it sends no credentials to."""
_warned = False


@dataclass(frozen=True)
class Collector:
    """Where a run's spans go: the traces URL, and who named it (the user's environment or the workspace)."""

    url: str
    named_by: str
    """The environment variable, or `WORKSPACE_SETTING`."""

    @property
    def from_environment(self) -> bool:
        return self.named_by != WORKSPACE_SETTING


def _traces_url(base: str) -> str:
    url = base.rstrip("/")
    return url if url.endswith(TRACES_PATH) else url + TRACES_PATH


def collector(config: HostConfig | None, environ: Mapping[str, str] | None = None) -> Collector | None:
    """The collector a run exports to, or None: the environment's first, the workspace's only without one."""
    environ = os.environ if environ is None else environ
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true" or \
            environ.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return None
    traces = environ.get(TRACES_ENDPOINT_VARIABLE, "").strip()
    if traces:  # the signal's own URL is used as given (the OTLP exporter specification)
        return Collector(traces, TRACES_ENDPOINT_VARIABLE)
    base = environ.get(ENDPOINT_VARIABLE, "").strip()
    if base:
        return Collector(_traces_url(base), ENDPOINT_VARIABLE)
    named = (config.telemetry.otlp_endpoint or "").strip() if config is not None else ""
    return Collector(_traces_url(named), WORKSPACE_SETTING) if named else None


def credentials_notice(found: Collector) -> str:
    """What the first export to a collector named by the workspace says (once a process)."""
    return (f"Tracing: spans go to {found.url}, the collector `{WORKSPACE_SETTING}` of oscova.toml names; it is "
            f"sent no credentials from the environment ({', '.join(HEADERS_VARIABLES)} go only to a collector "
            f"the environment names: {TRACES_ENDPOINT_VARIABLE} or {ENDPOINT_VARIABLE})")


def _exporter(found: Collector) -> Any:
    from oscova_runtime.network import collector_exporter

    if found.from_environment:  # the user's collector: the exporter reads the user's headers and certificates
        return collector_exporter(found.url, timeout=EXPORT_TIMEOUT)
    return _BareExporter(found.url)


def _tracer(found: Collector) -> Any:
    """The tracer exporting to `found`, or None (one warning) when OpenTelemetry is not installed."""
    global _warned
    provider = _providers.get(found)
    if provider is None:
        try:
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor

            exporter = _exporter(found)
        except ImportError:
            if not _warned:
                _warned = True
                log.warning("Tracing is configured (%s) but OpenTelemetry is not installed; runs are not traced. "
                            "Install it with: pip install 'oscova-lsp[otel]'", found.url.removesuffix(TRACES_PATH))
            return None
        provider = TracerProvider(resource=Resource.create({"service.name": INSTRUMENTATION}))
        provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=SCHEDULE_DELAY_MS))
        _providers[found] = provider
    return provider.get_tracer(INSTRUMENTATION)


def run_tracer(config: HostConfig | None, redact: Redactor, *, conversation_id: str | None = None,
               environ: Mapping[str, str] | None = None,
               notify: Callable[[str], None] | None = None) -> SpanObserver | None:
    """The span observer of one run, or None when tracing is not configured (or not installed). `notify`
    hears, once a process, that a collector named by the workspace is sent no credentials."""
    found = collector(config, environ)
    if found is None:
        return None
    tracer = _tracer(found)
    if tracer is None:
        return None
    if not found.from_environment and found.url not in _announced:
        _announced.add(found.url)
        (notify or log.warning)(credentials_notice(found))
    capture = bool(config is not None and config.telemetry.capture_content)
    return SpanObserver(tracer, redact, capture_content=capture, conversation_id=conversation_id)


def flush(timeout: float = EXPORT_TIMEOUT) -> None:
    """Exports the spans still buffered (blocking; for the end of a process or a test)."""
    for provider in _providers.values():
        provider.force_flush(int(timeout * 1000))


class _BareExporter:
    """OTLP/HTTP (protobuf) to a collector the workspace named, with no header, certificate, `.netrc` or
    credential provider of the user's: the span data and its content type, nothing else."""

    def __init__(self, url: str) -> None:
        self.url = url

    def export(self, spans: Sequence[Any]) -> Any:
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
        from opentelemetry.sdk.trace.export import SpanExportResult
        from oscova_runtime.network import post_spans

        if not self.url.lower().startswith(("http://", "https://")):
            log.warning("Spans are not exported to %s: a collector's address starts with http:// or https://",
                        self.url)
            return SpanExportResult.FAILURE
        body = encode_spans(spans).SerializePartialToString()
        try:  # the network gateway: the span data and its content type, no redirect followed
            post_spans(self.url, body, timeout=EXPORT_TIMEOUT)
        except (OSError, ValueError) as error:  # urllib's errors are OSErrors; a bad URL a ValueError
            log.warning("Exporting %d span(s) to %s failed: %s", len(spans), self.url, error)
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


# -- content as the conventions' JSON message shapes ----------------------------------------------------


def _parts(message: ChatMessage) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for content in message.contents:
        if isinstance(content, TextContent):
            parts.append({"type": "text", "content": content.text})
        elif isinstance(content, ReasoningContent):
            parts.append({"type": "reasoning", "content": content.text})
        elif isinstance(content, FunctionCallContent):
            parts.append({"type": "tool_call", "id": content.call_id, "name": content.name,
                          "arguments": jsonable(content.arguments)})
        elif isinstance(content, FunctionResultContent):
            parts.append({"type": "tool_call_response", "id": content.call_id, "response": jsonable(content.result)})
        elif isinstance(content, DataContent):
            parts.append({"type": "blob", "modality": "image", "mime_type": content.media_type})
    return parts


def _messages(messages: Sequence[ChatMessage], finish_reason: str | None = None) -> str:
    out = []
    for message in messages:
        entry: dict[str, Any] = {"role": message.role, "parts": _parts(message)}
        if finish_reason is not None:
            entry["finish_reason"] = finish_reason
        out.append(entry)
    return json.dumps(out, ensure_ascii=False, default=str)


def _json(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(jsonable(value), ensure_ascii=False)


class SpanObserver:
    """A `CallObserver` that turns a run's calls into spans (one instance per run)."""

    def __init__(self, tracer: Any, redact: Redactor, *, capture_content: bool = False,
                 conversation_id: str | None = None) -> None:
        from opentelemetry import trace

        self._trace = trace
        self.tracer = tracer
        self.redact = redact
        self.wants_content = capture_content
        self.conversation_id = conversation_id

    def _clean(self, attributes: dict[str, Any]) -> dict[str, Any]:
        """Drops empty values and redacts every string (keys never reach a collector)."""
        out: dict[str, Any] = {}
        for key, value in attributes.items():
            if value is None:
                continue
            if isinstance(value, str):
                value = self.redact.text(value)
            elif isinstance(value, list):
                value = [self.redact.text(v) if isinstance(v, str) else v for v in value]
            out[key] = value
        return out

    def call_started(self, call: ObservedCall) -> None:
        trace = self._trace
        parent = call.parent.state.get(_STATE) if call.parent is not None else None
        context = trace.set_span_in_context(parent) if parent is not None else None
        if call.kind == "agent":
            name = f"invoke_agent {call.agent_name or call.name}"
            kind = trace.SpanKind.INTERNAL
            attributes: dict[str, Any] = {
                "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.id": call.name,
                "gen_ai.agent.name": call.agent_name or call.name, "gen_ai.agent.description": call.description,
                "gen_ai.conversation.id": self.conversation_id if call.parent is None else None,
            }
        elif call.kind == "model":
            name = f"chat {call.name}"
            kind = trace.SpanKind.CLIENT
            options = call.options
            attributes = {
                "gen_ai.operation.name": "chat", "gen_ai.provider.name": call.provider, "gen_ai.system": call.provider,
                "gen_ai.request.model": call.name, "server.address": call.server_address,
                "server.port": call.server_port,
            }
            if options is not None:
                attributes.update({
                    "gen_ai.request.temperature": options.temperature, "gen_ai.request.top_p": options.top_p,
                    "gen_ai.request.max_tokens": options.max_tokens, "gen_ai.request.seed": options.seed,
                    "gen_ai.request.stop_sequences": list(options.stop) if options.stop else None,
                })
                if self.wants_content:
                    if options.instructions:
                        attributes["gen_ai.system_instructions"] = json.dumps(
                            [{"type": "text", "content": options.instructions}], ensure_ascii=False)
                    attributes["gen_ai.input.messages"] = _messages(call.messages)
        else:
            name = f"execute_tool {call.name}"
            kind = trace.SpanKind.INTERNAL
            attributes = {
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": call.name,
                "gen_ai.tool.call.id": call.call_id, "gen_ai.tool.type": "function",
                "gen_ai.tool.description": call.description,
            }
            if self.wants_content and call.arguments is not None:
                attributes["gen_ai.tool.call.arguments"] = _json(call.arguments)
        call.state[_STATE] = self.tracer.start_span(name, context=context, kind=kind,
                                                    attributes=self._clean(attributes))

    def call_ended(self, call: ObservedCall) -> None:
        span = call.state.pop(_STATE, None)
        if span is None:
            return
        attributes: dict[str, Any] = {}
        if call.kind == "model":
            if call.usage is not None:
                attributes["gen_ai.usage.input_tokens"] = call.usage.input_tokens
                attributes["gen_ai.usage.output_tokens"] = call.usage.output_tokens
                if call.usage.cached_input_tokens is not None:  # the GenAI conventions' cache-read attribute
                    attributes["gen_ai.usage.cache_read.input_tokens"] = call.usage.cached_input_tokens
            attributes["gen_ai.response.model"] = call.response_model
            if call.finish_reason:
                attributes["gen_ai.response.finish_reasons"] = [call.finish_reason]
            if self.wants_content and call.response is not None:
                attributes["gen_ai.output.messages"] = _messages(call.response, call.finish_reason or "stop")
        elif call.kind == "tool" and self.wants_content and call.error is None:
            attributes["gen_ai.tool.call.result"] = _json(call.result)
        if call.error is not None:
            error = call.error
            attributes["error.type"] = "cancelled" if _cancelled(error) else type(error).__qualname__
            detail = str(error).strip()
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR,
                                               self.redact.text(detail) if detail else None))
        span.set_attributes(self._clean(attributes))
        span.end()


def _cancelled(error: BaseException) -> bool:
    import asyncio

    return isinstance(error, asyncio.CancelledError | GeneratorExit)
