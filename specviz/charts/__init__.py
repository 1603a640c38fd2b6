"""Charts: pure functions from round records to plotly figures (or tables), no Streamlit, so
they are tested without a browser and every number in a figure comes from a record."""

from specviz.charts.adaptive import k_choice_bars
from specviz.charts.distributions import bonus_bars, candidate_frame, label, label_text, pq_bars, residual_bars
from specviz.charts.kv import kv_ledger, kv_timeline
from specviz.charts.totals import acceptance_chart
from specviz.charts.trigram import trigram_frame

__all__ = ["acceptance_chart", "bonus_bars", "candidate_frame", "k_choice_bars", "kv_ledger", "kv_timeline", "label",
           "label_text", "pq_bars", "residual_bars", "trigram_frame"]  # fmt: skip
