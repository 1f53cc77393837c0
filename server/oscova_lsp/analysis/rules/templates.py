"""A template as its renderer sees it, in template files and inline `instructions` alike: it parses (OSC100),
binds what it uses (OSC101), keeps the prompt prefix stable (OSC102), renders nothing empty (OSC103, OSC106),
places memory (OSC104), fences untrusted data (OSC105), is used at all (OSC107), and keeps a value that
changes after its fixed text (OSC108). Which names a renderer
binds is `bindings.py`'s answer."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from oscova_runtime.catalogue import MEMORY_VARIABLES, PERSONAL_VARIABLES, VARIABLE_CHANGES

from ..bindings import Declaration, TemplateBindings, binders, template_bindings
from ..diagnostics import Diagnostic, Fix, Related, TextEdit
from ..files import DefinitionFile, TemplateFile, template_facts, variable_places
from ..jinja_facts import (
    GUARDED,
    UNDEFINED_EFFECTS,
    SyntaxProblem,
    TemplateFacts,
    VariableUse,
)
from ..suggest import did_you_mean
from ..template_uses import LISTED_USES, TemplateUse
from ..text import LineIndex, Position, Range
from .common import Context, first_line, listed, value_place
from .rule import INFO, E, H, Rule, W

if TYPE_CHECKING:  # imported by OSC108 when it has fixed text to count (17 ms a cold start need not pay)
    from oscova_runtime.prompt_cache import CacheMinimum
    from oscova_runtime.tokens import Tokenizer

SYNTAX_ERROR = Rule(
    "OSC100", E, "templates", "Jinja2 syntax error",
    """The template does not parse; it fails when it is rendered. Each broken construct (the tag, the
expression, the block left open) is reported where it is, and the rest of the template is still checked.""")

UNBOUND = Rule(
    "OSC101", E, "templates", "A variable the rendering provider does not bind",
    """A template is rendered by one provider with its variables only: agent instructions by `personal`,
the environment template by `environment`, the memory system prompt by `memory`, a custom provider's
template by that provider with its declared `variables`. Jinja renders an unbound variable without an error,
and the message says what happens where it is used: printed, it renders empty; tested (`{% if escalate %}`),
the test is false and its block never renders; looped over, the loop never runs; read from
(`{{ customer.name }}`) or computed with, the rendering fails. The message names the renderer and, where
another provider binds the name, which one.
Uses the template guards itself are not reported here (OSC109 says when nothing binds them): the subject of a
`default` (`d`) filter, of an `is defined` or `is undefined` test, and uses that rendering reaches only where the
name is defined: inside what a test guards (`if`, `elif`, `else`, a conditional expression, the right side of
`and` / `or`) when the test, with the name undefined, would be false or fail (`{% if x %}`, `x | length > 0`,
`x.items is defined`, `x[0] == "a"`), and inside a loop over it (`{% for m in messages %}` … `messages[0]`). The
test or the loop itself is still reported.
Names the template sets itself count as Jinja renders them: from their `set` on, a block's own only inside
it, `loop` inside a `for`, `caller`, `varargs` and `kwargs` inside a macro.""",
    "use the closest bound name, or declare the variable in `[variables]` with a value to fill in")

GUARDED_UNBOUND = Rule(
    "OSC109", H, "templates", "A guarded variable that nothing binds",
    """The template guards the variable (`{{ region | default("EU") }}`, `{% if vip is defined %}`), so it
renders as written; but the provider that renders it never binds the name, so the default always applies or
the test always finds it undefined. Declare it (in `[variables]`, or a custom provider's `variables`) if it
is meant to be set, or drop the guard. A hint: shown in the editor, not in `oscova-lsp check`'s output unless
asked for (`--select OSC109`).""", in_check=False)

CURRENT_TIME = Rule(
    "OSC102", W, "templates", "`current_time` in standing instructions",
    """A value that changes every minute in the standing instructions changes the prompt prefix on every
run and defeats prompt caching. Use `current_date`, and the `current_datetime` tool for the clock. Reported
where caching can apply, as OSC108 judges it: the template's fixed text reaches the shortest prefix the agent's
endpoint caches (a local server caches any).""",
    "use `current_date`")

USER_CONTEXT_NOT_SHARED = Rule(
    "OSC103", W, "templates", "`user_context` in the instructions of an agent that is not shared",
    """`user_context` holds file-backed personal context only for a `shared: true` definition; elsewhere
it renders empty.""")

MEMORY_NOT_PLACED = Rule(
    "OSC104", INFO, "templates", "A memory system prompt without `{{ agent_memory }}`",
    """When the memory system prompt does not reference `{{ agent_memory }}`, the memory provider appends
the generated `<agent_memory>` block after it. Reference it to choose where memory goes.""")

UNDELIMITED = Rule(
    "OSC105", W, "templates", "An untrusted value rendered outside a labelled delimiter",
    """Provider output is trusted model input and is not sanitized. `user_context`, `agent_memory` and the
variables of a custom provider with `trusted = false` are data: render them inside a labelled delimiter, an
XML-like tag pair such as `<user_context>...</user_context>` or a fenced block, so the model can tell data
from instructions. In the memory system prompt, `agent_memory` arrives in its own `<agent_memory>` tags and
needs none.""",
    "wrap it in a tag")

WORKING_DIRECTORY = Rule(
    "OSC106", W, "templates", "`working_directory` in the environment template",
    """The default host does not derive a working directory: `working_directory` renders empty. Use
`workspace_directories`.""")

UNUSED = Rule(
    "OSC107", H, "templates", "A template file that no agent or provider uses",
    """No definition's `instructions_file`, no template path in `oscova.toml` and no include, import or
extends reaches this file, so no provider renders it and its variables cannot be checked: only its syntax is
(OSC100). A template of another tool kept in the workspace (an Ansible role's, say) gets this hint and
nothing else; `[host] exclude` leaves its folder out altogether.""")

CACHE_PREFIX = Rule(
    "OSC108", W, "templates", "A value that changes per day, user or run before 256 tokens or more of fixed text",
    """An endpoint reuses the cached prefix of a prompt: everything before the first part that differs from an
earlier request. A value that changes daily (`current_date`), per user (`user_name`, `user_email`, `user_context`,
…) or per run (`agent_memory`) ends that prefix where it is rendered, so every token of fixed text after it is
sent and paid for again on each day, for each user or on each run. Reported only where caching can apply: when
the template's own fixed text (a part of the request) reaches the shortest prefix the agent's endpoint caches —
OpenAI and Azure OpenAI 1,024 tokens; Anthropic 1,024 to 4,096 by model; Gemini 2,048 to 4,096; DeepSeek 64; a
local server (llama.cpp, Ollama) 0, since it reuses any common prefix of the previous request; any other endpoint
is taken to be OpenAI-compatible, 1,024. `[models.NAME] cache_min_tokens` sets the endpoint's own. The figures
count the template's fixed text in the tokens of the agent's model (`[models.NAME] tokenizer` or its OpenAI name;
4 characters a token where none is known or the tokenizer is a `tokenizer.json`): at least that many, since values
and loops add to it. `oscova-lsp preview` prints the same warning, with the same figure, under the request's
tokens. There is no quick fix: moving
the value changes what the prompt says where, which is the author's call. `current_time` is OSC102's.""")

CACHEABLE_TOKENS = 256
"""The least fixed text after a changing value that OSC108 reports: OpenAI caches prompts in steps of 128 tokens
past its minimum; below 256 the saving is not worth reordering the prompt for."""
_JINJA_CONSTRUCT = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", re.S)

_VARIABLES_WITH_CHECKS = frozenset({"current_time", "user_context", "working_directory"})
"""Names checked wherever they are bound (OSC102, OSC103, OSC106)."""


def check_file(ctx: Context, parsed: TemplateFile) -> list[Diagnostic]:
    """A template file: its syntax, whether anything uses it, and its checks for each of its uses."""
    facts = parsed.facts
    if facts is None:  # not read (too large, not text): OSC001 or a notice says so
        return []
    out = [SYNTAX_ERROR.diagnostic(parsed.path, _syntax_error_range(parsed.lines, error), _syntax_message(error))
           for error in facts.syntax_errors]
    bindings = template_bindings(ctx.ws, parsed)
    if bindings.unused:  # no renderer: nothing to say of its variables
        return out + [UNUSED.diagnostic(parsed.path, first_line(parsed.lines),
                                        "no agent, provider or include renders this template, so only its "
                                        "syntax is checked")]
    return out + _template_checks(ctx, parsed, bindings)


def check_inline(ctx: Context, parsed: DefinitionFile) -> list[Diagnostic]:
    """A definition's inline `instructions` (while they are its own, not borrowed), positions mapped back
    through their YAML scalar."""
    inline, agent = parsed.inline, ctx.agent(parsed)
    if inline is None or agent is None or "instructions" in parsed.borrowed_keys:
        return []
    doc = agent.doc
    out: list[Diagnostic] = []
    for error in inline.facts.syntax_errors:
        start = inline.map.position(parsed.lines, parsed.text, error.line, 0, "", 0)
        rng = parsed.lines.line_range(start.line) if inline.map.kind == "block" else value_place(doc, ("instructions",))
        out.append(SYNTAX_ERROR.diagnostic(parsed.path, rng, _syntax_message(error)))
    return out + _template_checks(ctx, parsed, template_bindings(ctx.ws, parsed))


def _syntax_message(error: SyntaxProblem) -> str:
    unknown = _UNKNOWN_TAG.match(error.message)
    tag = unknown.group(1) if unknown else ""
    if tag in _EXTENSION_TAGS:  # Ansible and Flask load these; the renderer of agents does not
        return (f"template syntax error: {error.message} (`{tag}` is a tag of Jinja's `{_EXTENSION_TAGS[tag]}` "
                "extension, which oscova does not load)")
    return f"template syntax error: {error.message}"


_UNKNOWN_TAG = re.compile(r"Encountered unknown tag '(\w+)'")
_EXTENSION_TAGS = {"do": "jinja2.ext.do", "break": "jinja2.ext.loopcontrols", "continue": "jinja2.ext.loopcontrols",
                   **dict.fromkeys(("trans", "pluralize", "endtrans"), "jinja2.ext.i18n")}
"""Tags of the extensions Jinja ships, which other tools' templates use."""


def _syntax_error_range(lines: LineIndex, error: SyntaxProblem) -> Range:
    """The failing construct's range on its line (the whole line when Jinja gave no construct)."""
    line = min(error.line, lines.line_count - 1)
    if error.end_column is None or error.end_column <= error.column:
        return lines.line_range(line)
    return Range(lines.position_of_char(line, error.column), lines.position_of_char(line, error.end_column))


def _template_checks(ctx: Context, parsed: TemplateFile | DefinitionFile, bindings: TemplateBindings) -> list[Diagnostic]:
    """The checks of a template file or of a definition's inline instructions, for each of its uses."""
    out: list[Diagnostic] = []
    path, lines = parsed.path, parsed.lines
    facts = template_facts(parsed)
    if facts is None:  # callers pass a template with facts or a definition with inline instructions
        return out
    inline = parsed if isinstance(parsed, DefinitionFile) else None
    uses = bindings.uses
    personal_uses = [use for use in uses if use.renderer == "personal" and not use.no_context]
    places = None  # `variable_places`, aligned with `facts.free_uses`: made for the first use reported only
    for index, var in enumerate(facts.free_uses):
        unbound = bindings.unbound_uses(var.name)
        untrusted = bindings.untrusted(var.name)
        if not unbound and not untrusted and var.name not in _VARIABLES_WITH_CHECKS:
            continue  # the common case: nothing to report, no range computed
        if places is None:
            places = variable_places(parsed)
        rng = places[index][1]()
        if unbound and not var.guarded:
            out.append(_unbound(ctx, path, rng, var, unbound, bindings))
        elif unbound and var.effect != GUARDED:  # inside a guarded branch: its test is reported
            found = [d for d in binders(ctx.ws, var.name) if d.binder.kind != "jinja"]
            words = _not_bound(ctx, path, var.name, unbound, bindings, found)
            out.append(GUARDED_UNBOUND.diagnostic(path, rng, f"{words}: {UNDEFINED_EFFECTS[var.effect]}"))
        if var.name == "current_time" and personal_uses:
            cacheable = _cacheable(ctx, facts, personal_uses)
            if cacheable is not None:
                out.append(CURRENT_TIME.diagnostic(
                    path, rng, f"`current_time` changes every minute, so in standing instructions it ends the "
                               f"request's cacheable prefix on every run; {cacheable}",
                    Fix("Use `current_date`", (TextEdit(path, rng, "current_date"),))))
        if var.name == "user_context":
            not_shared = [use for use in personal_uses if use.agent_path and not _is_shared(ctx, use.agent_path)]
            if not_shared:
                out.append(USER_CONTEXT_NOT_SHARED.diagnostic(
                    path, rng, f"`user_context` renders empty: the agent is not `shared` "
                               f"({listed([u.label for u in not_shared])})"))
        if var.name == "working_directory" and any(u.renderer == "environment" and not u.no_context for u in uses):
            out.append(WORKING_DIRECTORY.diagnostic(path, rng, "`working_directory` renders empty: the default host "
                                                    "does not derive it; use `workspace_directories`"))
        if untrusted and not facts.is_delimited(var.offset):
            out.append(UNDELIMITED.diagnostic(
                path, rng, f"`{var.name}` is untrusted data ({untrusted}) rendered outside a labelled delimiter",
                Fix(f"Wrap it in <{var.name}> tags", _wrap_edits(path, facts, var, rng, lines, inline))))
    cache = _cache_prefix(ctx, parsed, facts, [u for u in uses if not u.no_context])
    if cache is not None:
        out.append(cache)
    if any(use.renderer == "memory" and not use.no_context for use in uses) and not any(
            v.name == "agent_memory" for v in facts.free_uses):
        rng = first_line(lines) if inline is None else Range.of(0, 0, 0, 0)
        out.append(MEMORY_NOT_PLACED.diagnostic(path, rng, "the memory system prompt does not reference "
                                                "`{{ agent_memory }}`: the `<agent_memory>` block is appended after it"))
    return out


_CHANGING_BY_RENDERER = {
    "personal": frozenset(v.name for v in PERSONAL_VARIABLES if v.changes and v.name != "current_time"),
    "memory": frozenset(v.name for v in MEMORY_VARIABLES if v.changes),
}


_AGAIN = {"daily": "each day", "per user": "for each user", "per run": "on each run"}


def _cache_prefix(ctx: Context, parsed: TemplateFile | DefinitionFile, facts: TemplateFacts,
                  uses: list[TemplateUse]) -> Diagnostic | None:
    """OSC108 at the first value that changes, when 256 tokens or more of the template's fixed text follow it and
    the template alone reaches the shortest prefix the agent's endpoint caches."""
    changing = frozenset().union(*(_CHANGING_BY_RENDERER.get(u.renderer, frozenset()) for u in uses))
    first = min((v for v in facts.free_uses if v.name in changing), key=lambda v: v.offset, default=None)
    if first is None:
        return None
    close = facts.text.find("}}", first.offset)
    start = close + 2 if close != -1 else first.offset
    fixed_after = _JINJA_CONSTRUCT.sub("", facts.text[start:])
    if len(fixed_after) < CACHEABLE_TOKENS:  # a token is a character at least: nothing to count
        return None
    tokenizer, _ = _checker_model(ctx, uses)
    after = tokenizer.count(fixed_after)
    if after < CACHEABLE_TOKENS:
        return None
    cacheable = _cacheable(ctx, facts, uses)
    if cacheable is None:  # no prefix of a request this short is cached: the order changes nothing
        return None
    rng = next(where() for var, where in variable_places(parsed) if var.offset == first.offset)
    how = VARIABLE_CHANGES[first.name]
    return CACHE_PREFIX.diagnostic(parsed.path, rng, (
        f"`{{{{ {first.name} }}}}` on line {rng.start.line + 1} changes {how}, so the request's cacheable prefix "
        f"ends there: at least the {after:,} tokens of this template's fixed text after it are sent again "
        f"{_AGAIN.get(how, how)}; "
        f"{cacheable}"))


def _cacheable(ctx: Context, facts: TemplateFacts, uses: list[TemplateUse]) -> str | None:
    """Why a prefix of the requests this template is part of can be cached (the endpoint's minimum, and the
    template's own fixed text when it reaches it), or None: the template is shorter than the shortest prefix the
    endpoint caches. The template is a lower bound of the request: the rest only adds to it."""
    tokenizer, minimum = _checker_model(ctx, uses)
    if not minimum.tokens:
        return minimum.endpoint
    total = tokenizer.count(_JINJA_CONSTRUCT.sub("", facts.text))
    return f"{minimum.endpoint}, and this template alone has {total:,}" if total >= minimum.tokens else None


def _checker_model(ctx: Context, uses: list[TemplateUse]) -> tuple[Tokenizer, CacheMinimum]:
    """The tokenizer and cache minimum of the first agent model among the uses: its OpenAI encoding, else the
    estimate (the checker reads no `tokenizer.json`: it asks the disk only through the workspace)."""
    from oscova_runtime import prompt_cache, tokens

    host = ctx.ws.host
    for use in uses:
        parsed = ctx.ws.files.get(use.agent_path) if use.agent_path else None
        definition = parsed.definition if isinstance(parsed, DefinitionFile) else None
        settings = host.models.get(definition.model if definition is not None else "default")
        if settings is None:
            continue
        name = settings.tokenizer if settings.tokenizer in tokens.OPENAI_ENCODINGS else (
            None if settings.tokenizer else tokens.encoding_for_model(settings.model))
        tokenizer = tokens.openai_encoding(name) if name is not None else tokens.Tokenizer(tokens.ESTIMATE)
        return tokenizer, prompt_cache.cache_minimum(settings.model, settings.base_url, settings.cache_min_tokens,
                                              offline=settings.kind == "offline")
    return tokens.Tokenizer(tokens.ESTIMATE), prompt_cache.cache_minimum("", None)


def _wrap_edits(path: str, facts: TemplateFacts, var: VariableUse, rng: Range, lines: LineIndex,
                inline: DefinitionFile | None) -> tuple[TextEdit, ...]:
    """Wraps the whole `{{ ... }}` expression around the variable in a tag named after it."""
    text = facts.text
    open_at = text.rfind("{{", 0, var.offset)
    close_at = text.find("}}", var.offset)
    if open_at == -1 or close_at == -1:
        return (TextEdit(path, rng, f"<{var.name}>{var.name}</{var.name}>"),)
    if inline is None:
        before, after = lines.position(open_at), lines.position(close_at + 2)
        return (TextEdit(path, Range(after, after), f"</{var.name}>"),
                TextEdit(path, Range(before, before), f"<{var.name}>"))
    # Inline: the expression's columns relative to the variable, on the variable's file line.
    delta_open = var.offset - open_at
    delta_close = close_at + 2 - var.offset
    start = Position(rng.start.line, max(rng.start.character - delta_open, 0))
    end = Position(rng.start.line, rng.start.character + delta_close)
    return (TextEdit(path, Range(end, end), f"</{var.name}>"), TextEdit(path, Range(start, start), f"<{var.name}>"))


def _is_shared(ctx: Context, agent_path: str) -> bool:
    parsed = ctx.ws.files.get(agent_path)
    return isinstance(parsed, DefinitionFile) and parsed.definition is not None and parsed.definition.shared


def _not_bound(ctx: Context, path: str, name: str, unbound: list[TemplateUse], bindings: TemplateBindings,
               found: list[Declaration]) -> str:
    """"`name` is not bound by the … provider that renders this template (for …); … binds it": the words OSC101
    and OSC109 start with, before what rendering does."""
    renderers = sorted({u.renderer for u in unbound})
    named = list(dict.fromkeys((u.label, u.via[-1] if u.via and u.via[-1] != path else None) for u in unbound))
    labels = listed([label + (f" via {ctx.rel(via)}" if via else "") for label, via in named[:LISTED_USES]],
                    len(named))
    if all(u.no_context for u in unbound):
        importers = listed(sorted({ctx.rel(u.via[-1]) for u in unbound if u.via}))
        return (f"`{name}` is not bound: {importers} imports this template without context, so it sees no "
                f"provider variable (for {labels}); add `with context` to the import")
    names = "`, `".join(renderers)
    noun = "provider that renders" if len(renderers) == 1 else "providers that render"
    message = f"`{name}` is not bound by the `{names}` {noun} this template"
    if len(bindings.uses) > 1 or unbound[0].agent_path is not None or unbound[0].renderer != "personal":
        message += f" (for {labels})"
    if found:
        message += f"; {found[0].binder.words} binds it"
    return message


def _unbound(ctx: Context, path: str, rng: Range, var: VariableUse, unbound: list[TemplateUse],
             bindings: TemplateBindings) -> Diagnostic:
    name = var.name
    found = [d for d in binders(ctx.ws, name) if d.binder.kind != "jinja"]
    message = f"{_not_bound(ctx, path, name, unbound, bindings, found)}: {UNDEFINED_EFFECTS[var.effect]}"
    if all(u.no_context for u in unbound):
        return UNBOUND.diagnostic(path, rng, message)
    related = tuple(Related(d.path, d.range, f"`{name}` is bound here by {d.binder.renderer}") for d in found
                    if d.path is not None and d.range is not None)
    choice = did_you_mean(name, sorted(bindings.provider_names(unbound)))
    use_fix = None
    if choice:
        message += choice.words  # the same suggestion as the quick fix, for the CLI
        use_fix = Fix(f"Use `{choice.name}`", (TextEdit(path, rng, choice.name),))
    declare = _declare_variable_edit(ctx, name) if all(u.renderer == "personal" for u in unbound) else None
    declare_fix = Fix(f"Declare `{name}` in `[variables]`", (declare,)) if declare is not None else None
    return UNBOUND.diagnostic(path, rng, message, use_fix, declare_fix, related=related)


def _declare_variable_edit(ctx: Context, name: str) -> TextEdit | None:
    """`name = ""` under `[variables]` of the host configuration (the table added at its end if missing)."""
    host_file = ctx.ws.host_file
    if host_file is None or host_file.doc is None:
        return None
    doc = host_file.doc
    table = (*host_file.prefix, "variables")
    header = doc.spans.get(table)
    if header is not None and header.key is not None:
        line = header.value.start.line + 1
        return TextEdit(host_file.path, Range.of(line, 0, line, 0), f'{name} = ""\n')
    end_line = host_file.lines.line_count - 1
    end = Position(end_line, len(host_file.lines.line_text(end_line)))
    section = "tool.oscova.variables" if host_file.prefix else "variables"
    lead = "\n" if host_file.lines.line_text(end_line).strip() else ""
    return TextEdit(host_file.path, Range(end, end), f'{lead}\n[{section}]\n{name} = ""\n')
