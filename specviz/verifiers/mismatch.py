"""A deliberately wrong verifier, kept so the exactness lab can show it failing: it verifies a
tree whose children were drawn WITHOUT replacement as if they had been drawn WITH replacement,
trying every child against the node's full q instead of q with the earlier children removed.

Child 2 was drawn from q_2 = norm(q with x_1 zeroed), larger than q on every other token, so
min(1, p(x)/q(x)) overstates how often it should be accepted: the target's likelier tokens
come out too often. On chains and deterministic trees it is the lossless rule (nothing to
mismatch).
"""

from specviz.drafters import drafter_names
from specviz.drafters.base import Draft
from specviz.verifiers.tokenwise import TokenWise


class Mismatch(TokenWise):
    name = "replacement-mismatch"
    lossless = False
    summary = "WRONG on purpose: a without-replacement tree verified as if drawn with replacement (biased)"

    def refuses(self, drafter, settings) -> str | None:
        if not drafter.sampled_tree or settings.tree_sampling != "without-replacement":
            sampled = " or ".join(drafter_names(sampled_tree=True)) or "none yet"
            return (f"{self.name} verification needs a tree sampled without replacement (drafter {sampled}, "
                    "tree sampling without-replacement)")  # fmt: skip
        return None

    def sampling(self, draft: Draft) -> str | None:
        return "with-replacement" if draft.sampling == "without-replacement" else draft.sampling
