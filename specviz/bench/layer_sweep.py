"""Layer-skip's knob, measured: how acceptance and tokens per target pass grow with the number n of
the target's own layers that draft (1 .. n_layer - 1). More layers draft better and cost more; the
table says how much better, on the run's prompt, temperature and seed."""

from models.checkpoint import Checkpoint
from specviz.core.engine import Generation
from specviz.core.settings import Settings
from specviz.drafters.layer_skip import LayerSkipDrafter


def acceptance_by_layers(target: Checkpoint, prompt: list[int], temperature: float, k: int = 4,
                         max_new_tokens: int = 200, seed: int = 0) -> list[dict]:  # fmt: skip
    """One generation per n: [{"layers", "acceptance", "tokens_per_forward", "accepted", "tried"}], n ascending."""
    rows = []
    for n in range(1, target.config.n_layer):
        settings = Settings(drafter=LayerSkipDrafter.name, layer_skip_layers=n, k=k, temperature=temperature,
                            max_new_tokens=max_new_tokens, seed=seed)  # fmt: skip
        s = Generation(target, prompt, settings).run().summary()
        rows.append({"layers": n, "acceptance": s["acceptance_rate"], "tokens_per_forward": s["mean_accepted"],
                     "accepted": s["accepted"], "tried": s["tried"]})  # fmt: skip
    return rows
