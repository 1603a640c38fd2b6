"""A step-through over one generation: its rounds computed once, then browsed back and forth."""

from models.checkpoint import Checkpoint
from specviz.core.engine import Generation
from specviz.core.record import RoundRecord
from specviz.core.settings import Settings


class Session:
    """A step-through over one generation: rounds are computed once, then browsed.

    ``cursor`` is the number of rounds shown (0 = only the prompt). ``forward`` computes a new
    round only when the cursor is at the newest one. Several sessions may browse one generation
    (a class following the same preset: see ui/controls.py): each keeps its own cursor, and a
    round is computed once, by whichever session reaches it first, under the generation's lock."""

    def __init__(self, target: Checkpoint, prompt: list[int], settings: Settings, draft_model=None,
                 generation: "Generation | None" = None):  # fmt: skip
        self.generation = generation or Generation(target, prompt, settings, draft_model)
        assert self.generation.settings == settings and self.generation.trace.prompt == list(prompt)
        self.cursor = 0
        self.furthest = 0  # the most rounds this session has shown: its own horizon, whatever others computed

    @property
    def rounds(self) -> list[RoundRecord]:
        return self.generation.trace.rounds

    @property
    def current(self) -> RoundRecord | None:
        return self.rounds[self.cursor - 1] if self.cursor else None

    @property
    def at_end(self) -> bool:
        return self.cursor == len(self.rounds) and self.generation.done

    def forward(self) -> RoundRecord | None:
        if self.cursor == len(self.rounds):
            with self.generation.lock:  # another session may be computing this very round
                if self.cursor == len(self.rounds):
                    if self.generation.done:
                        return self.current
                    self.generation.step()
        self.cursor += 1
        self.furthest = max(self.furthest, self.cursor)
        return self.current

    def back(self) -> RoundRecord | None:
        self.cursor = max(0, self.cursor - 1)
        return self.current

    def seek(self, cursor: int) -> RoundRecord | None:
        """Go to a recorded round (never computes)."""
        self.cursor = max(0, min(cursor, len(self.rounds)))
        return self.current

    def run_to_end(self, progress=None) -> RoundRecord | None:
        with self.generation.lock:
            self.generation.run(progress)
        self.cursor = self.furthest = len(self.rounds)
        return self.current
