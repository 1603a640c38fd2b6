"""Charts: pure functions from round records to plotly figures (or tables), no Streamlit, so
they are tested without a browser and every number in a figure comes from a record."""

from specviz.charts.adaptive import k_choice_bars
from specviz.charts.block import EXPLAIN as BLOCK_EXPLAIN
from specviz.charts.block import SUMS as BLOCK_HELP
from specviz.charts.block import block_figure
from specviz.charts.distributions import bonus_bars, candidate_frame, label, label_text, pq_bars, residual_bars
from specviz.charts.kv import kv_ledger, kv_timeline
from specviz.charts.totals import acceptance_chart
from specviz.charts.trigram import HELP as TRIGRAM_HELP
from specviz.charts.trigram import trigram_frame
from specviz.charts.verdict import checks_frame, checks_help, checks_view, same_draft

__all__ = ["BLOCK_EXPLAIN", "BLOCK_HELP", "acceptance_chart", "block_figure", "bonus_bars", "candidate_frame", "checks_frame",
           "checks_help", "checks_view", "k_choice_bars", "kv_ledger", "kv_timeline", "label", "label_text", "pq_bars",
           "residual_bars", "same_draft", "TRIGRAM_HELP", "trigram_frame"]  # fmt: skip
