"""Adaptive K: each round's draft depth chosen from measured acceptance and the measured cost of a pass."""
