"""The terminal front end of runs and previews: a live transcript, a spinner while waiting, `--json` lines.

The answer streams to stdout; a reasoning model's thinking, tool calls, results, warnings, progress and errors
go to stderr, so `oscova-lsp run agent > answer.txt` keeps only the answer.
"""

from __future__ import annotations

import asyncio
import functools
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import IO, Any

from oscova_runtime.messages import short_type_name
from oscova_runtime.tokens import figure

from ..reporting import display_path, json_text, printable, printable_line, styler, wants_color
from .errors import RunError
from .events import jsonable
from .execution import ApproveCallback
from .service import RunService

SPINNER_NAME = "dots"
"""The spinner of rich's table shown while nothing streams."""
SPIN_INTERVAL = 0.1
RESULT_PREVIEW = 240


def _one_line(value: Any, limit: int = RESULT_PREVIEW) -> str:
    text = value if isinstance(value, str) else json_text(jsonable(value))
    text = printable_line(" ".join(text.split()))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _arguments(arguments: Any) -> str:
    if isinstance(arguments, dict):
        return ", ".join(f"{printable_line(str(k))}={printable_line(json_text(v))}" for k, v in arguments.items())
    return _one_line(arguments)


class _Style:
    """Colour through rich's styles (`reporting.styler`), loaded only when the stream gets colour."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._stylers: dict[str, Callable[[str], str]] = {}

    def __call__(self, style: str, text: str) -> str:
        if not self.enabled:
            return text
        render = self._stylers.get(style)
        if render is None:
            render = self._stylers[style] = styler(style)
        return render(text)

    def dim(self, text: str) -> str:
        return self("dim", text)

    def bold(self, text: str) -> str:
        return self("bold", text)

    def red(self, text: str) -> str:
        return self("red", text)

    def cyan(self, text: str) -> str:
        return self("cyan", text)

    def green(self, text: str) -> str:
        return self("green", text)

    def yellow(self, text: str) -> str:
        return self("yellow", text)


class _Spinner:
    """The frames of rich's spinner and the control codes that redraw its line (rich loaded on first use: only a
    terminal shows a spinner)."""

    def __init__(self) -> None:
        from rich.control import Control, ControlType
        from rich.spinner import SPINNERS

        self.frames = str(SPINNERS[SPINNER_NAME]["frames"])
        self.clear_line = str(Control.move_to_column(0)) + str(Control((ControlType.ERASE_IN_LINE, 2)))


def format_duration(ms: float) -> str:
    return f"{ms:.0f} ms" if ms < 1000 else f"{ms / 1000:.1f} s"


def call_summary(calls: list[dict[str, Any]]) -> list[str]:
    """One aligned line per model call (`modelCall` events) and tool call (`toolResult` events with a
    duration), in the order they ended: what each cost in tokens and time."""
    rows: list[tuple[str, str, str, str]] = []
    for event in calls:
        duration = format_duration(float(event.get("durationMs") or 0))
        if event["kind"] == "modelCall":
            tokens = model_call_tokens(event)
            model = event.get("responseModel") or event.get("model") or ""
            rows.append(("model", f"{event.get('agentId') or ''} → {model}", tokens, duration))
        elif event.get("within"):  # a tool call of an agent called as a tool
            rows.append(("tool", f"{event.get('agentId') or ''} → {event.get('name') or ''}", "", duration))
        else:
            rows.append(("tool", str(event.get("name") or ""), "", duration))
    if not rows:
        return []
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    return [f"  {kind:<{widths[0]}}  {what:<{widths[1]}}  {tokens:>{widths[2]}}  {duration:>8}".rstrip()
            for kind, what, tokens, duration in rows]


def model_call_tokens(event: dict[str, Any]) -> str:
    """A `modelCall`'s tokens as the endpoint reported them, with the count predicted here before the request
    was sent beside its input (`275 in (273 predicted) · 12 out (8 reasoning)`)."""
    usage = event.get("usage") or {}
    notes = []
    if "cachedInputTokens" in usage:
        notes.append(f"{usage['cachedInputTokens']} cached")
    if isinstance(event.get("predictedInputTokens"), int):
        notes.append(f"{figure(event['predictedInputTokens'], event.get('predictionExact', True))} predicted")
    noted = f" ({', '.join(notes)})" if notes else ""
    if not usage:
        return "no usage" + noted
    reasoning = f" ({usage['reasoningTokens']} reasoning)" if "reasoningTokens" in usage else ""
    return f"{usage.get('inputTokens', 0)} in{noted} · {usage.get('outputTokens', 0)} out{reasoning}"


class LiveTranscript:
    """Renders run events as they come. With a TTY on stderr, a spinner shows while nothing streams."""

    def __init__(self, out: IO[str], err: IO[str], *, spinner: bool | None = None) -> None:
        self.out = out
        self.err = err
        self.style = _Style(wants_color(err))
        self.spinner_enabled = err.isatty() if spinner is None else spinner
        self.at_line_start = True
        self.status = "starting"
        self.last_output = time.monotonic()
        self._spinner_shown = False
        self._frame = 0
        self.paused = False
        self.final: dict[str, Any] | None = None
        self.transcript: str | None = None
        self.calls: list[dict[str, Any]] = []
        """`modelCall` events and timed `toolResult` events, for the summary at the end."""
        self.thinking = False
        """A reasoning model's thinking is being written (to stderr, apart from the answer)."""
        self.open_nested = 0
        """Tool calls of agents called as tools that have started and not ended (they run one at a time)."""

    # -- spinner -------------------------------------------------------------------------------------

    @functools.cached_property
    def _spinner(self) -> _Spinner:
        return _Spinner()

    def _clear_spinner(self) -> None:
        if self._spinner_shown:
            self.err.write(self._spinner.clear_line)
            self.err.flush()
            self._spinner_shown = False

    def tick(self) -> None:
        if not self.spinner_enabled or not self.at_line_start or self.paused or self.final is not None:
            return
        if time.monotonic() - self.last_output < SPIN_INTERVAL:
            return
        frames = self._spinner.frames
        self._frame = (self._frame + 1) % len(frames)
        self.err.write(f"{self._spinner.clear_line}{self.style.cyan(frames[self._frame])} "
                       f"{self.style.dim(self.status + '…')}")
        self.err.flush()
        self._spinner_shown = True

    async def spin(self) -> None:
        while True:
            self.tick()
            await asyncio.sleep(SPIN_INTERVAL)

    # -- output --------------------------------------------------------------------------------------

    def _end_line(self) -> None:
        if not self.at_line_start:
            self.out.write("\n")
            self.out.flush()
            self.at_line_start = True

    def _end_thinking(self) -> None:
        if self.thinking:
            self.err.write("\n")
            self.err.flush()
            self.thinking = False

    def note(self, text: str) -> None:
        self._clear_spinner()
        self._end_thinking()
        self._end_line()
        self.err.write(text + "\n")
        self.err.flush()
        self.last_output = time.monotonic()

    def __call__(self, event: dict[str, Any]) -> None:
        kind = event["kind"]
        style = self.style
        if kind not in ("reasoning", "modelCall"):
            self._end_thinking()
        if kind == "reasoning":
            self._clear_spinner()
            if not self.thinking:
                self._end_line()
                self.err.write(style.dim("thinking: "))
                self.thinking = True
            self.err.write(style.dim(printable(event.get("text", ""))))
            self.err.flush()
            self.last_output = time.monotonic()
        elif kind == "started":
            self.transcript = event.get("transcript")
            self.status = "waiting for the model"
            name = printable_line(str(event.get("agentName") or event.get("agentId")))
            self.note(style.dim(f"▶ {name} · run {event['runId']}"))
        elif kind == "delta":
            self._clear_spinner()
            text = printable(event.get("text", ""))  # per delta: each character is escaped alone
            self.out.write(text)
            self.out.flush()
            if text:
                self.at_line_start = text.endswith("\n")
            self.last_output = time.monotonic()
        elif kind == "toolCall":
            tool = printable_line(str(event.get("name")))
            self.status = f"running {tool}"
            self.note(self._nested(event) + style.cyan(f"→ {tool}({_arguments(event.get('arguments'))})"))
        elif kind == "modelCall":
            self.calls.append(event)
        elif kind == "toolResult":
            if "durationMs" in event:
                self.calls.append(event)
            self.status = "waiting for the model"
            tool = printable_line(str(event.get("name")))
            at = self._nested(event)
            if "error" in event:
                self.note(at + style.red(f"← {tool} failed: {_one_line(event['error'])}"))
            elif event.get("denied"):
                reason = f": {printable_line(str(event['reason']))}" if event.get("reason") else ""
                self.note(at + style.red(f"← {tool}: denied{reason}"))
            else:
                self.note(at + style.dim(f"← {tool}: {_one_line(event.get('result'))}"))
        elif kind == "warning":
            self.note(style.yellow(f"⚠ {printable_line(_one_line(event.get('message'), 400))}"))
        elif kind == "notice":
            self.note(style.dim(f"! {printable_line(str(event.get('provider')))}: "
                                f"{printable_line(_one_line(event.get('message'), 400))}"))
        elif kind in ("completed", "failed", "cancelled"):
            self.final = event
            self._clear_spinner()
            self._end_line()
            if kind == "completed":
                usage = event.get("usage") or {}
                tokens = f" · {usage['totalTokens']} tokens" if usage.get("totalTokens") else ""
                incomplete = event.get("incomplete")
                if isinstance(incomplete, dict):  # not a success: the answer is cut off, or was stopped
                    self.err.write(style.yellow(f"⚠ incomplete: {printable_line(str(incomplete.get('message')))}")
                                   + style.dim(tokens) + "\n")
                else:
                    self.err.write(style.dim(f"✓ completed{tokens}") + "\n")
            elif kind == "failed":
                self.err.write(style.red("✗ ") + printable(str(event.get("error") or "The run failed.")) + "\n")
            else:
                self.err.write(style.red("✗ cancelled") + "\n")
            for line in call_summary(self.calls):
                self.err.write(style.dim(line) + "\n")
            if self.transcript:
                self.err.write(style.dim(f"transcript: {printable_line(display_path(self.transcript))}") + "\n")
            self.err.flush()

    def _nested(self, event: dict[str, Any]) -> str:
        """What goes before a tool call's line: for a call an agent called as a tool made, an indent by its
        depth and that agent's id (`  echo `); nothing for the requested agent's own."""
        if event.get("within") is None:
            return ""
        if event["kind"] == "toolResult":
            self.open_nested = max(0, self.open_nested - 1)
            depth = self.open_nested + 1
        else:
            depth = self.open_nested + 1
            self.open_nested += 1
        return "  " * depth + self.style.dim(printable_line(str(event.get("agentId") or "")) + " ")

    def ask(self, prompt: str) -> None:
        """Writes a question on stderr and keeps the spinner away until `answered`."""
        self._clear_spinner()
        self._end_line()
        self.paused = True
        self.err.write(prompt)
        self.err.flush()

    def answered(self) -> None:
        self.paused = False
        self.last_output = time.monotonic()


class JsonLines:
    """`--json`: one event per line on stdout."""

    def __init__(self, out: IO[str]) -> None:
        self.out = out

    def __call__(self, event: dict[str, Any]) -> None:
        self.out.write(json_text(event, default=str) + "\n")
        self.out.flush()


def _read_line_in_daemon_thread() -> asyncio.Future[str]:
    """A line from stdin without blocking the loop or interpreter exit (a cancelled run leaves it)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[str] = loop.create_future()

    def read() -> None:
        try:
            line = sys.stdin.readline()
        except (OSError, ValueError):
            line = ""
        def deliver() -> None:
            if not future.done():
                future.set_result(line)

        loop.call_soon_threadsafe(deliver)

    threading.Thread(target=read, name="oscova-approval", daemon=True).start()
    return future


def terminal_approver(view: LiveTranscript) -> ApproveCallback:
    async def approve(request: dict[str, Any]) -> bool:
        view.ask(view.style.bold(f"? Allow {printable_line(str(request['tool']))}"
                                 f"({_arguments(request.get('arguments'))})? [y/N] "))
        try:
            answer = await _read_line_in_daemon_thread()
        finally:
            view.answered()
        return answer.strip().lower() in ("y", "yes")

    return approve


def refusing_approver(note: Callable[[str], None]) -> ApproveCallback:
    """Where nobody can answer (stdin is not a terminal): each approval-required call is refused, and `note`
    says so. Never an answer taken from a file."""

    async def refuse(request: dict[str, Any]) -> bool:
        note(f"{printable_line(str(request['tool']))} needs approval and there is no terminal to ask: refused")
        return False

    return refuse


def approver(view: LiveTranscript | None, err: IO[str]) -> ApproveCallback:
    """The `[y/N]` prompt at a terminal (stdin and a live view), else `refusing_approver`."""
    if view is not None and sys.stdin.isatty():
        return terminal_approver(view)
    return refusing_approver(view.note if view is not None else lambda text: print(text, file=err, flush=True))


async def run_in_terminal(
    service: RunService, agent_id: str, text: str, *, as_json: bool, out: IO[str], err: IO[str],
    interactive: bool,
) -> dict[str, Any]:
    """Runs with a live view; Ctrl-C cancels the run (a second Ctrl-C stops waiting for it). Raises `RunError`
    when no definition has the id `agent_id`: nothing starts (a usage error, not a failed run)."""
    workspace = service.view()  # what the run reads, and what the notice of withheld tools is about
    unknown = workspace.unknown(agent_id)
    if unknown is not None:
        raise RunError(unknown)
    view: LiveTranscript | None = None if as_json else LiveTranscript(out, err)
    listener = JsonLines(out) if view is None else view
    if view is not None:  # a notice goes between the lines of the live view, not into its spinner
        service.notify = view.note
    approve = terminal_approver(view) if view is not None and interactive else None
    if approve is None:
        _say_what_is_withheld(service.approval_tools(agent_id, view=workspace), as_json, err)
    handle = service.start_run(agent_id, text, on_event=listener, approve=approve, view=workspace)
    loop = asyncio.get_running_loop()
    interrupts = 0

    def on_interrupt() -> None:
        nonlocal interrupts
        interrupts += 1
        if interrupts == 1:
            handle.cancel()
        else:  # a second Ctrl-C stops waiting
            raise KeyboardInterrupt

    installed = False
    try:
        loop.add_signal_handler(signal.SIGINT, on_interrupt)
        installed = True
    except (NotImplementedError, RuntimeError):  # Windows: asyncio.run cancels on Ctrl-C instead
        pass
    spinner = asyncio.ensure_future(view.spin()) if view is not None and view.spinner_enabled else None
    try:
        result = await handle
        if result.get("transcriptError"):  # the run went on; what it left behind is missing or cut short
            err.write(f"⚠ {result['transcriptError']}\n")
            err.flush()
        if view is None and result.get("transcript"):  # stdout is the JSON lines; stderr says where they went
            err.write(f"transcript: {display_path(result['transcript'])}\n")
        return result
    finally:
        if spinner is not None:
            spinner.cancel()
        if installed:
            loop.remove_signal_handler(signal.SIGINT)


def _say_what_is_withheld(names: list[str], as_json: bool, err: IO[str]) -> None:
    """One note naming the tools a run without approval prompts does not offer, and why."""
    if not names:
        return
    listed = ", ".join(names)
    verb = "needs" if len(names) == 1 else "need"
    pronoun = "it was" if len(names) == 1 else "they were"
    why, instead = (("with --json nothing is asked", "run without --json at a terminal") if as_json else
                    ("the input comes from a pipe, not a terminal", "pass --input at a terminal"))
    err.write(f"note: {listed} {verb} approval, which cannot be asked here ({why}), so {pronoun} not offered to "
              f"the model; {instead} to be asked\n")
    err.flush()


def format_preview(preview: dict[str, Any], *, color: bool = False) -> str:
    """The assembled instructions, messages, tools and each provider's contribution, for reading."""
    style = _Style(color)
    lines: list[str] = []

    def heading(title: str) -> None:
        if lines:
            lines.append("")
        lines.append(style.bold(f"── {title} " + "─" * max(0, 60 - len(title))))

    heading(f"Instructions ({printable_line(str(preview['agentId']))})")
    lines.append(printable((preview.get("instructions") or "").rstrip("\n")) or style.dim("(none)"))
    heading("Messages")
    for message in preview.get("messages") or []:
        source = message.get("source")
        if message.get("sourceId"):  # the provider's class name: its module-qualified id is in the JSON
            source = short_type_name(str(message["sourceId"]))
        lines.append(f"[{printable_line(str(message['role']))} · {printable_line(str(source))}] "
                     f"{printable(message.get('text', ''))}")
    if not preview.get("messages"):
        lines.append(style.dim("(none)"))
    heading("Tools")
    for tool in preview.get("tools") or []:
        flag = " (approval required)" if tool.get("approvalRequired") else ""
        lines.append(f"{printable_line(str(tool['name']))}{flag} — {_one_line(tool.get('description') or '', 120)}")
    if not preview.get("tools"):
        lines.append(style.dim("(none)"))
    for note in preview.get("notes") or ():
        lines.append(style.yellow(f"note: {printable_line(str(note))}"))
    heading("Providers")
    for number, provider in enumerate(preview.get("providers") or [], start=1):
        parts = []
        if provider.get("instructions"):
            count = len(provider["instructions"].splitlines())
            parts.append(f"instructions ({count} line{'s' if count != 1 else ''})")
        if provider.get("messages"):
            parts.append(f"{len(provider['messages'])} message(s)")
        if provider.get("tools"):
            parts.append("tools " + printable_line(", ".join(provider["tools"])))
        contributed = "; ".join(parts) if parts else style.dim(
            "nothing" + (f" ({printable_line(provider['inactiveReason'])})" if provider.get("inactiveReason") else ""))
        lines.append(f"{number:>2}. {printable_line(provider['type'])} ({printable_line(provider['class'])}): "
                     f"{contributed}")
        for notice in provider.get("notices") or ():
            lines.append(f"    ! {printable_line(str(notice))}")
    if preview.get("tokens"):
        heading(f"Tokens ({printable_line(str(preview['tokens'].get('tokenizer')))})")
        lines.extend(token_lines(preview["tokens"], preview.get("tools") or []))
    return "\n".join(lines)


BAR_WIDTH = 30


def token_lines(counted: dict[str, Any], tools: list[dict[str, Any]]) -> list[str]:
    """What the request costs: the total and its three parts, then each provider's share with a bar, in order,
    and each tool's cost; `≈` before every figure of an estimate."""
    exact = bool(counted.get("exact"))
    total = int(counted["total"])
    lines = [f"{figure(total, exact)} tokens: instructions {figure(counted['instructions'], exact)} · messages "
             f"{figure(counted['messages'], exact)} · tools {figure(counted['tools'], exact)}"]
    if counted.get("cacheable"):
        lines.append(f"{figure(counted['cacheable']['tokens'], exact)} cacheable: the prefix ends where "
                     f"{printable_line(str(counted['cacheable']['endsAt']))}")
    for warning in ([counted["note"]] if counted.get("note") else []) + list(counted.get("warnings") or ()):
        lines.append(f"! {printable_line(str(warning))}")
    for advice in counted.get("caching") or ():
        lines.append(f"! {advice['code']} {printable_line(str(advice['path']))}:{advice['line']}: "
                     f"{printable_line(str(advice['message']))}")
    for provider in counted.get("byProvider") or []:
        spent = provider["instructions"] + provider["messages"] + provider["tools"]
        if spent:
            bar = "█" * max(1, round(BAR_WIDTH * spent / total)) if total else ""
            lines.append(f"  {printable_line(str(provider['type'])):<14} {figure(spent, exact):>8}  {bar}")
    markers = total - sum(p["instructions"] + p["messages"] + p["tools"] for p in counted.get("byProvider") or [])
    if markers > 0:  # the chat format's own: message markers, the tool list's frame, the reply's start
        lines.append(f"  {'(chat format)':<14} {figure(markers, exact):>8}")
    costs = [f"{printable_line(str(t['name']))} {figure(t['tokens'], exact)}" for t in tools if "tokens" in t]
    if costs:
        lines.append("  tools: " + " · ".join(costs))
    return lines
