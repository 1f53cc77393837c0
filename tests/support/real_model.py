"""The real-model scenarios: the agents tests/realmodel/ runs against llama.cpp's `llama-server` (SmolLM2-135M-
Instruct), and which tests/runs/test_recorded_streams.py runs again on the server's recorded streams."""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "llama-server"
QWEN = "Qwen-Qwen2.5-7B-Instruct.jinja"
DEEPSEEK_R1 = "llama-cpp-deepseek-r1.jinja"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"

# SmolLM2's token ids (its GGUF's `tokenizer.ggml.tokens`). `tool_choice: required` makes the server constrain the
# answer with a grammar, but Qwen2.5's format lets text come before `<tool_call>`, and a 135M model never writes
# that marker: the bias starts the call (`<`, `tool`, `_`, `call`, `>`, newline), ends the answer where the
# grammar allows it (`<|im_end|>`) and closes a string argument (`"}`). Greedy decoding makes it the same every run.
FORCE_TOOL_CALL = {"44": 12, "19324": 12, "79": 12, "4350": 12, "46": 12, "198": 12, "2": 24, "23597": 18}
BIAS = "{" + ", ".join(f'"{token}": {bias}' for token, bias in FORCE_TOOL_CALL.items()) + "}"
# The DeepSeek-R1 template opens the thinking in the prompt (`<think>\n`) and SmolLM2 never closes it: a grammar
# bounds the reasoning, then writes `</think>` and a short answer, which the server parses apart.
THINK_THEN_ANSWER = r'root ::= [a-zA-Z0-9 +=.,:\n]{8,60} "</think>" [a-zA-Z0-9 +=.,!]{1,40}'
INLINE_THINK = r'root ::= "<think>" [a-zA-Z0-9 +=.,:]{8,60} "</think>" [a-zA-Z0-9 +=.,!]{1,40}'

AGENTS = {
    "greeter": """\
        id: greeter
        model: local
        instructions: Answer in one short sentence.
        chat_options: {temperature: 0, max_tokens: 24}
        default_providers: false
        context_providers: [personal]
        """,
    "short": """\
        id: short
        model: local
        instructions: Describe things at length.
        chat_options: {temperature: 0, max_tokens: 3}
        default_providers: false
        context_providers: [personal]
        """,
    "clock": f"""\
        id: clock
        model: local
        instructions: Tell the time.
        tools: [current_datetime]
        chat_options: {{temperature: 0, max_tokens: 80, tool_choice: required, logit_bias: {BIAS}}}
        default_providers: false
        context_providers: [tools, personal]
        """,
    "reader": f"""\
        id: reader
        model: local
        instructions: Read the notes.
        tools: [read_file]
        workspaces: [data]
        chat_options: {{temperature: 0, max_tokens: 30, tool_choice: required, logit_bias: {BIAS}}}
        default_providers: false
        context_providers: [tools, personal]
        """,
    "echo": """\
        id: echo
        model: local
        description: Repeats what it is told.
        exposed_as_tool: true
        instructions: Repeat the request in a few words.
        chat_options: {temperature: 0, max_tokens: 16}
        default_providers: false
        context_providers: [personal]
        """,
    "lead": f"""\
        id: lead
        model: local
        instructions: Delegate to echo.
        agent_tools: [echo]
        chat_options: {{temperature: 0, max_tokens: 80, tool_choice: required, logit_bias: {BIAS}}}
        default_providers: false
        context_providers: [agent_tools, personal]
        """,
    "thinker": f"""\
        id: thinker
        model: thinking
        instructions: Answer briefly.
        chat_options: {{temperature: 0, max_tokens: 80, grammar: '{THINK_THEN_ANSWER}'}}
        default_providers: false
        context_providers: [personal]
        """,
    "inline": f"""\
        id: inline
        model: local
        instructions: Answer briefly.
        chat_options: {{temperature: 0, max_tokens: 80, grammar: '{INLINE_THINK}'}}
        default_providers: false
        context_providers: [personal]
        """,
}
