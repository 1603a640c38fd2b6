"""The target's lean forward pass: C++ kernels for the products and attention (built at first use,
torch where no compiler is found) and ``CachedModel``, the target with its KV cache."""
