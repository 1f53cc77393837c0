"""The cacheable prefix, predicted and measured: the preview's prediction from the files alone equals
the leading tokens `diff` measures between two recorded runs of the same agent on different days and for
different users."""

from __future__ import annotations

import datetime as _dt
import types
from pathlib import Path

import pytest
from oscova_lsp.runs import RunService, recorder
from oscova_lsp.runs.diff import diff_transcripts
from oscova_runtime import tokens

from tests.support.fake_openai import Reply

from .test_cli import oscova
from .test_token_counts import example_workspace

INPUT = "My deployment to eu-west fails with a 502."


def on_day(monkeypatch: pytest.MonkeyPatch, day: _dt.datetime) -> None:
    """Recorded runs from now on start at `day` (the run's frozen clock the templates read)."""

    class Frozen(_dt.datetime):
        @classmethod
        def now(cls, tz: _dt.tzinfo | None = None) -> Frozen:  # type: ignore[override]
            return day  # type: ignore[return-value]

    monkeypatch.setattr(recorder, "_dt", types.SimpleNamespace(datetime=Frozen, UTC=_dt.UTC))


async def recorded_run(root: Path, fake_openai, monkeypatch, day: _dt.datetime, user: str) -> str:
    toml = root / "oscova.toml"
    toml.write_text(toml.read_text().replace('name = "Alice Example"', f'name = "{user}"')
                    .replace('name = "Bob Example"', f'name = "{user}"'))
    on_day(monkeypatch, day)
    fake_openai.enqueue(Reply(text="Known incident."))
    service = RunService(root)
    try:
        result = await service.run("concierge", INPUT)
    finally:
        await service.aclose()
    assert result["status"] == "completed", result.get("error")
    return str(result["transcript"])


async def predicted(root: Path) -> dict:
    service = RunService(root)
    try:
        return (await service.preview("concierge", INPUT))["tokens"]["cacheable"]
    finally:
        await service.aclose()


MONDAY = _dt.datetime(2026, 11, 30, 9, 0, tzinfo=_dt.UTC)
TUESDAY = _dt.datetime(2026, 12, 1, 9, 0, tzinfo=_dt.UTC)


async def test_the_predicted_prefix_is_what_two_runs_on_different_days_and_for_different_users_share(
        tmp_path, fake_openai, canary_key, monkeypatch):
    root = example_workspace(tmp_path / "examples", fake_openai.base_url)
    prediction = await predicted(root)
    assert prediction["endsAt"] == "`current_date` (personal) changes daily"

    monday_alice = await recorded_run(root, fake_openai, monkeypatch, MONDAY, "Alice Example")
    tuesday_bob = await recorded_run(root, fake_openai, monkeypatch, TUESDAY, "Bob Example")
    tuesday_alice = await recorded_run(root, fake_openai, monkeypatch, TUESDAY, "Alice Example")
    date_tokens = tokens.tokenizer_for("gpt-4.1-mini").count("2026-11-30")
    for other in (tuesday_bob, tuesday_alice):  # another day (and another user): the date is the first difference
        shown = diff_transcripts(monday_alice, other).splitlines()[0]
        assert shown.endswith(" leading tokens (o200k_base); the instructions differ on their line 6.")
        # The prediction ends where the date begins; two dates share a few tokens of it (the year), no more.
        assert prediction["tokens"] <= shared_of(shown) < prediction["tokens"] + date_tokens
    # Another user on the same day: more is shared, up to the user's name.
    same_day = diff_transcripts(tuesday_alice, tuesday_bob).splitlines()[0]
    assert shared_of(same_day) > prediction["tokens"] and same_day.endswith("the instructions differ on their line 8.")  # "You talk with …"

    cli = oscova("diff", monday_alice, tuesday_bob, cwd=root)
    assert cli.returncode == 1 and cli.stdout.splitlines()[0] == diff_transcripts(monday_alice, tuesday_bob).splitlines()[0]


def shared_of(line: str) -> int:
    return int(line.split(" share ")[1].split(" ")[0].replace(",", ""))


async def test_for_another_user_the_prediction_is_exactly_what_two_runs_share(tmp_path, fake_openai, canary_key,
                                                                               monkeypatch):
    root = example_workspace(tmp_path / "examples", fake_openai.base_url)
    persona = root / "templates" / "partials" / "persona.j2"
    persona.write_text(persona.read_text().replace("Today is {{ current_date }}.\n", ""))  # no date: users differ first
    prediction = await predicted(root)
    assert prediction["endsAt"] == "`user_name` (personal) changes per user"
    alice = await recorded_run(root, fake_openai, monkeypatch, MONDAY, "Alice Example")
    bob = await recorded_run(root, fake_openai, monkeypatch, TUESDAY, "Bob Example")
    assert shared_of(diff_transcripts(alice, bob).splitlines()[0]) == prediction["tokens"]


async def test_with_the_date_moved_to_the_end_the_prefix_grows_to_the_user_values(tmp_path, fake_openai, canary_key):
    root = example_workspace(tmp_path / "examples", fake_openai.base_url)
    before = await predicted(root)
    persona = root / "templates" / "partials" / "persona.j2"
    persona.write_text(persona.read_text().replace("Today is {{ current_date }}.\n", ""))
    concierge = root / "templates" / "concierge.j2"
    concierge.write_text(concierge.read_text() + "Today is {{ current_date }}.\n")
    after = await predicted(root)
    assert after["tokens"] > before["tokens"]
    assert after["endsAt"] == "`user_name` (personal) changes per user"
