"""specviz: the speculative decoding engine (drafters, verification, round records, charts).
Nothing here imports Streamlit; the pages (pages/, ui/) render what this package computes."""

import os

import torch

# One thread. The models are so small that a second thread gains little even on an idle machine,
# and on a busy one it is ruinous: torch's OpenMP threads wait for each other at every op, so
# while another process held one of this machine's 2 cores a 16-token run took 3-5 s with 2
# threads and 0.02 s with 1. SPECVIZ_THREADS (a positive integer) overrides it; `python -m
# specviz bench --threads N` measures any count.
_threads = os.environ.get("SPECVIZ_THREADS", "1")
torch.set_num_threads(int(_threads) if _threads.isdigit() and int(_threads) > 0 else 1)
