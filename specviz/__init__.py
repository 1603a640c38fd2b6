"""specviz: the speculative decoding engine (drafters, verification, round records, charts).
Nothing here imports Streamlit; the pages in pages/ render what this package computes."""
