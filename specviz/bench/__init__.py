"""Measurement: the bench (every method against plain decoding and transformers), the shoot-out,
memory, and the bench's chart."""
