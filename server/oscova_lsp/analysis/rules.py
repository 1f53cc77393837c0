"""Every OSC code in one table: default severity, summary, documentation and quick fix.

`oscova-lsp rule CODE` prints the documentation; the server shows it on hover; checks refer to codes by
name only, so a code's words are written once, here.
"""

from __future__ import annotations

from dataclasses import dataclass

from oscova_runtime.paths import OUTSIDE_ROOT

from .diagnostics import Severity


@dataclass(frozen=True, slots=True)
class Rule:
    code: str
    severity: Severity
    where: str
    summary: str
    explanation: str
    fix: str | None = None

    def documentation(self) -> str:
        lines = [
            f"{self.code}: {self.summary}",
            "",
            f"Default severity: {self.severity.label}. Applies to: {self.where}.",
            "",
            self.explanation.strip(),
        ]
        if self.fix:
            lines += ["", f"Quick fix: {self.fix}."]
        lines += [
            "",
            f"Silence it on one line with `# oscova: ignore[{self.code}]` (YAML) or "
            f"`{{# oscova: ignore[{self.code}] #}}` (Jinja), or for the workspace in `oscova.toml`:",
            "",
            f'    [lint]\n    ignore = ["{self.code}"]',
        ]
        return "\n".join(lines)


E, W, INFO, H = Severity.ERROR, Severity.WARNING, Severity.INFORMATION, Severity.HINT

_RULES = (
    Rule("OSC001", E, "any file", "The file cannot be read: YAML, TOML or encoding error",
         """The file is not valid YAML or TOML, is not UTF-8, nests deeper than 100 levels, or uses YAML
aliases that expand past 10,000 nodes (an "alias bomb"). Nothing else in the file is checked until it
parses."""),
    Rule("OSC002", E, "definitions, host configuration", "Schema violation",
         """A value has the wrong type, a required key such as `id` is missing, an enum value is not one of
its choices, or `instructions` and `instructions_file` are both set. The agent cannot be built from this
definition. `oscova-lsp schema` prints the JSON Schema the definition is validated against. In `[lint]`, a code
that names no rule (`E501`, `OSC999`) is one too, reported whatever `select` and `ignore` say: a typo must
not pass for a clean check."""),
    Rule("OSC003", W, "definitions, host configuration", "Unknown key",
         """The key is not part of the format, so it is ignored. It is most often a typo of a known key.""",
         "rename it to the closest known key"),
    Rule("OSC004", E, "definitions, host configuration", "Duplicate mapping key",
         """The same key appears twice in one mapping. YAML loaders keep only one of them silently, so one of
the two values is lost."""),
    Rule("OSC005", E, "definitions", "Two definitions share an `id`",
         """An agent's `id` is its cache key and the name other agents call it by; two definitions with one id
replace each other in the orchestrator's cache and in `agent_tools`."""),
    Rule("OSC010", E, "definitions", "A null entry in `context_providers`",
         """`- null`, `- ~` or a bare `-` in `context_providers` is a null provider. The provider list of an
agent build request must not contain null entries: the agent fails when it is built, not before.""",
         "remove the entry"),
    Rule("OSC011", E, "definitions", "Two providers of the assembled list share a state key",
         """Every context provider has state keys (by default its class name), and agent construction throws
when two providers share one. This happens when a provider is listed in `context_providers` while the
default order already has it (for example `memory` with `memory: true`), or when one type is listed twice
without distinct `state_key` values.""",
         "set a unique `state_key`"),
    Rule("OSC012", E, "definitions", "A provider's state key equals the chat-history provider's",
         """The chat-history provider (`InMemoryChatHistoryProvider`) is always attached; agent construction
throws when a context provider shares its state key.""",
         "set another `state_key`"),
    Rule("OSC013", E, "definitions", "Unknown provider type",
         """The `context_providers` entry names neither a built-in provider type nor a custom provider
declared under `[providers.NAME]` in `oscova.toml`.""",
         "use the closest type"),
    Rule("OSC014", INFO, "definitions", "A listed provider contributes nothing under the host's conditions",
         """The provider is built but, with this host configuration, has nothing to contribute: for example
`memory` with no `[host] user_id`, `library` without the Library grant, or `todo` while the host has todo
support off."""),
    Rule("OSC020", W, "definitions", "`agent_tools` names no known agent",
         """No definition in the workspace has this id. The build omits missing agent tools silently.""",
         "use the closest agent id"),
    Rule("OSC021", W, "definitions", "`agent_tools` names an agent that is not exposed as a tool",
         """Only definitions with `exposed_as_tool: true` resolve as agent tools; others are omitted at build
time without an error.""",
         "set `exposed_as_tool: true` in that definition"),
    Rule("OSC022", W, "definitions", "`agent_tools` forms a cycle",
         """Agents call each other in a loop. The build guard stops the recursion, so some agent in the cycle
is built without its tools; at run time the agents may call each other without end. The message shows
the path."""),
    Rule("OSC030", W, "definitions", "One tool contributed twice",
         """The tool merge concatenates tools without deduplication: a tool listed twice, pinned and listed, or a
tool and an agent tool of one name reach the model twice.""",
         "remove the duplicate"),
    Rule("OSC031", W, "definitions", "Unknown tool",
         """The tool is neither a built-in tool nor declared under `[tools.NAME]`; it is omitted at run time.""",
         "use the closest tool name"),
    Rule("OSC040", E, "definitions, host configuration, templates",
         "A referenced template does not exist or is outside the workspace root",
         """An `instructions_file`, a template path in `oscova.toml`, or an `include`, `import`, `from` or
`extends` in a template names a file that does not exist, or one outside the workspace root (an absolute
path, `..`, or a symlink leading out). `instructions_file` is relative to the definition file that names
it; template paths in `oscova.toml` and in templates resolve against the workspace root. Files outside the
root are never read: not by the checker, not by preview, not by runs. `[memory] root` is held to the same
boundary: memory outside the workspace root is never read or written.

Templates that include each other, directly or through others, are reported here too: once for each
group of templates that reach each other, on the reference of the group's first template (by path) into
the group. Rendering such a template recurses until Jinja gives up, unless a condition stops the
recursion."""),
    Rule("OSC043", E, "definitions, host configuration", "A workspace grant outside the workspace root",
         """A folder in a definition's `workspaces` or in `[environment] workspace_directories` resolves
outside the workspace root (after `..` and symlinks). The agent's tools do not get it at run time unless
the host configuration says so explicitly: `[host] allow_outside_workspaces = true`."""),
    Rule("OSC044", W, "definitions, host configuration", "A workspace grant of `/` or the home folder",
         """A workspace grant is the whole file system, the home folder, or a folder holding it: the agent's
file tools could read and (with approval) write everything there, keys and dotfiles included. Reported
whether or not `[host] allow_outside_workspaces = true` lets it through: grant the folder the agent needs."""),
    Rule("OSC041", E, "definitions", "`model` names no configured model",
         """The definition's `model` has no `[models.NAME]` table in the host configuration, so the agent
cannot be run. It is reported where a model name is written, and for a definition without `model` (which
uses `default`) when `[models]` exists without `[models.default]`. A host configuration without any
`[models]` is one fact about the workspace: OSC042.""",
         "use the closest configured model"),
    Rule("OSC042", INFO, "host configuration", "No model is configured",
         """The host configuration has no `[models.NAME]` table: the workspace is checked, but its agents
cannot run until a model endpoint is configured (any OpenAI-compatible server, e.g. a local Ollama:
`[models.default]` with `model` and `base_url`). Reported once, on `oscova.toml`, not on every agent."""),
    Rule("OSC100", E, "templates", "Jinja2 syntax error",
         """The template does not parse; it fails when it is rendered. Each broken construct (the tag, the
expression, the block left open) is reported where it is, and the rest of the template is still checked."""),
    Rule("OSC101", E, "templates", "A variable the rendering provider does not bind",
         """A template is rendered by one provider with its variables only: agent instructions by `personal`,
the environment template by `environment`, the memory system prompt by `memory`, a custom provider's
template by that provider with its declared `variables`. An unbound variable renders as an empty string
without an error. The message names the renderer and, where another provider binds the name, which one.
Names the template sets itself count as Jinja renders them: from their `set` on, a block's own only inside
it, `loop` inside a `for`, `caller`, `varargs` and `kwargs` inside a macro.""",
         "use the closest bound name, or declare the variable in `[variables]`"),
    Rule("OSC102", W, "templates", "`current_time` in standing instructions",
         """A value that changes every minute in the standing instructions changes the prompt prefix on every
run and defeats prompt caching. Use `current_date`, and the `current_datetime` tool for the clock.""",
         "use `current_date`"),
    Rule("OSC103", W, "templates", "`user_context` in the instructions of an agent that is not shared",
         """`user_context` holds file-backed personal context only for a `shared: true` definition; elsewhere
it renders empty."""),
    Rule("OSC104", INFO, "templates", "A memory system prompt without `{{ agent_memory }}`",
         """When the memory system prompt does not reference `{{ agent_memory }}`, the memory provider appends
the generated `<agent_memory>` block after it. Reference it to choose where memory goes."""),
    Rule("OSC105", W, "templates", "An untrusted value rendered outside a labelled delimiter",
         """Provider output is trusted model input and is not sanitized. `user_context`, `agent_memory` and the
variables of a custom provider with `trusted = false` are data: render them inside a labelled delimiter, an
XML-like tag pair such as `<user_context>...</user_context>` or a fenced block, so the model can tell data
from instructions.""",
         "wrap it in a tag"),
    Rule("OSC106", W, "templates", "`working_directory` in the environment template",
         """The default host does not derive a working directory: `working_directory` renders empty. Use
`workspace_directories`."""),
    Rule("OSC107", H, "templates", "A template file that no agent or provider uses",
         """No definition's `instructions_file`, no template path in `oscova.toml` and no include, import or
extends reaches this file. It is checked as agent instructions."""),
)

RULES: dict[str, Rule] = {rule.code: rule for rule in sorted(_RULES, key=lambda rule: rule.code)}
"""Every rule by code, in code order (as `oscova-lsp rule` lists them and SARIF names them)."""


# -- messages built from values, beside their rule's words

ROOT_BASE = "the workspace root"
"""What template paths in templates and in the host configuration are relative to."""


def template_missing(value: str, base: str) -> str:
    """OSC040 for a template path that names no file; `base` is what the path is relative to (`ROOT_BASE`,
    or the definition file for `instructions_file`)."""
    return f"template `{value}` does not exist (relative to {base})"


def template_outside_root(value: str) -> str:
    """OSC040 for a template path that leads outside the root (absolute, `..`, a symlink): never read."""
    return f"template `{value}` is {OUTSIDE_ROOT}"


def memory_root_outside(value: str) -> str:
    """OSC040 for a `[memory] root` that leads outside the root: memory is never read or written there."""
    return f"`[memory] root` `{value}` leads outside the workspace root: memory is never read or written there"


def rule(code: str) -> Rule:
    return RULES[code]


# -- codes as users write them: `[lint]`, `--select` / `--ignore`, the editor settings

CODE_FORM = "codes look like OSC101 or OSC1"


def is_known_code(code: str) -> bool:
    """A code or a prefix of one (`OSC1` is every OSC1xx, `OSC` every code), in any case."""
    normal = code.strip().upper()
    return normal.startswith("OSC") and any(known.startswith(normal) for known in RULES)


def unknown_code(code: str, where: str = "") -> str:
    """The sentence for a code no rule has: `where` names the setting (`in `[lint] select``), or nothing."""
    return f"unknown code `{code}`{f' in {where}' if where else ''} ({CODE_FORM})"
