"""Read vLLM's numbers: a vLLM /metrics snapshot on the app's curves. The page is ui/vllm_page.py."""

from ui.vllm_page import render

render()
