"""The cost of syntax-error recovery: one template's analysis with 0, 1, 5 and 20 syntax errors.

Run: python benchmarks/recovery_bench.py [--runs 200]  (CPU time of this process: steadier on a shared machine)
Each broken construct costs a few extra parses of the template (Jinja stops at the first error; the checker
blanks the failing construct and parses again), so the cost grows with the number of errors, not with size.
"""

from __future__ import annotations

import argparse
import statistics
import time

from oscova_lsp.analysis.jinja_source import analyze_template

BROKEN = ["{{ agent_name |", "{% for item in %}", "{{ user_name | default( }}", "{% if %}", "{{ a b }}"]


def template(errors: int, lines: int = 60) -> str:
    """A 60-line template of text, expressions, a loop and conditions; `errors` lines replaced by broken ones."""
    body = []
    for n in range(lines):
        kind = n % 6
        if kind == 0:
            body.append(f"Section {n}: be brief and precise for {{{{ user_name }}}}.")
        elif kind == 1:
            body.append(f"{{% if team %}}Team {{{{ team | upper }}}} line {n}{{% endif %}}")
        elif kind == 2:
            body.append("{% for item in items %}- {{ item }} ({{ loop.index }}){% endfor %}")
        elif kind == 3:
            body.append(f"{{% set note_{n} = current_date ~ ' ' ~ agent_name %}}{{{{ note_{n} }}}}")
        elif kind == 4:
            body.append("<context>{{ user_context }}</context>")
        else:
            body.append("Plain text without any expression, as most lines of instructions are.")
    step = max(lines // max(errors, 1), 1)
    for k in range(errors):
        body[(k * step + 1) % lines] += " " + BROKEN[k % len(BROKEN)]
    return "\n".join(body) + "\n"


def timed(text: str, runs: int) -> tuple[float, float, int]:
    samples = []
    found = 0
    for _ in range(runs):
        start = time.process_time()
        facts = analyze_template(text)
        samples.append(time.process_time() - start)
        found = len(facts.syntax_errors)
    samples.sort()
    return statistics.median(samples) * 1000, samples[int(len(samples) * 0.95) - 1] * 1000, found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    print(f"a {len(template(0).splitlines())}-line template, {args.runs} analyses each")
    base = None
    for errors in (0, 1, 5, 20):
        median, p95, found = timed(template(errors), args.runs)
        base = base or median
        print(f"  {errors:2d} syntax errors: median {median:6.2f} ms, p95 {p95:6.2f} ms "
              f"({median / base:4.1f}x the valid template), {found} reported")


if __name__ == "__main__":
    main()
