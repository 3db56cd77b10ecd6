"""The Episode, the one door to the model: what it records when a strategy finishes."""

from __future__ import annotations

from scripted import play

from veriloop.domains.game24.domain import Game24
from veriloop.episode import Episode
from veriloop.records import Trajectory

RIGHT = "Answer: 1 + 4 * 6 - 1"
WRONG = "Answer: (1 + 1) * (4 + 6)"


class CountingGame24(Game24):
    """Game of 24, keeping the texts it scores."""

    def __init__(self) -> None:
        super().__init__()
        self.scored: list[str] = []

    def score(self, instance, text):  # type: ignore[no-untyped-def]
        self.scored.append(text)
        return super().score(instance, text)


def test_a_final_text_a_round_scored_is_not_scored_again() -> None:
    domain = CountingGame24()
    puzzle = domain.parse_instance({"instance": "1 1 4 6"})
    t, _ = play("backprompt:max_rounds=2", domain, puzzle, [WRONG, RIGHT])
    # Each round's text once; the trajectory's answer and correctness are round 2's.
    assert domain.scored == [WRONG, RIGHT]
    assert (t.final_text, t.final_answer, t.correct) == (RIGHT, t.rounds[-1].answer, True)


def test_a_final_text_no_round_holds_is_read_and_scored() -> None:
    domain = CountingGame24()
    puzzle = domain.parse_instance({"instance": "1 1 4 6"})
    t = Trajectory(strategy="mine", domain="game24", model="m", instance_id=puzzle.id, seed=0)
    episode = Episode(model=None, domain=domain, instance=puzzle, seed=0, trajectory=t)  # type: ignore[arg-type]
    episode.add_round(1, WRONG)
    episode.finish(RIGHT, "chosen")
    assert domain.scored == [WRONG, RIGHT]
    assert (t.final_answer, t.correct) == ("1 + 4 * 6 - 1", True)
