"""Real language models (transformers): their target (target.py) and their loading (load.py)."""
