"""A choice list too long to print (120,000 enum values) at an inline prompt: a few shown, the rest filtered by
what the user types."""

from __future__ import annotations

import time

from test_inline import fields_of, run

from mcpcli.terminal.inline import FormOutcome


def _huge() -> dict[str, object]:
    return {"type": "string", "enum": [f"region-{n:06d}" for n in range(120_000)], "required": True}


def test_a_huge_enum_shows_twenty_choices_and_reaches_the_prompt_fast() -> None:
    start = time.monotonic()
    outcome, output, script = run(fields_of(region=_huge()), "region-000003", "")
    assert time.monotonic() - start < 10
    assert outcome == FormOutcome("accept", {"region": "region-000003"})
    assert output.count("region-0") < 40  # not 120,000 lines
    assert "119,980 more" in output and "type part of one" in output
    assert script.prompts  # the prompt was reached


def test_typing_part_of_a_value_lists_the_matches_and_a_number_picks_one() -> None:
    outcome, output, _ = run(fields_of(region=_huge()), "n-11999", "2", "")
    assert "119999) region-119998" in output and "10 match" in output
    assert outcome == FormOutcome("accept", {"region": "region-000001"})  # "2" is the second choice of all


def test_a_filter_that_matches_nothing_says_so() -> None:
    outcome, output, _ = run(fields_of(region=_huge()), "nowhere", "region-000007", "")
    assert "none of its 120,000 choices contains 'nowhere'" in output
    assert len(output) < 5000 and outcome == FormOutcome("accept", {"region": "region-000007"})
