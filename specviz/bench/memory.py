"""What a drafter holds in memory: the bytes of every tensor and array reachable from it (its
tables, heads, indices and caches), each storage counted once. What it shares with the target
(layer-skip drafts in the target's own cache) is passed as ``exclude`` and not counted, so the
figure is what the method adds to plain decoding. Python objects' own overhead (dicts of n-gram
counts) is estimated with sys.getsizeof, container by container."""

import sys

import numpy as np
import torch

ATOMS = (str, bytes, int, float, bool, type(None))  # no references out: their getsizeof is all they hold


def _items(items, seen: set, stack: list) -> int:
    """A container's items: all atoms (a distilled table's index holds millions of ints, and one trip
    round the walk each took ~2 s) are counted here in bulk, each object once; otherwise every item
    goes on the stack."""
    items = list(items)
    if not set(map(type, items)) <= set(ATOMS):
        stack.extend(items)
        return 0
    by_id = dict(zip(map(id, items), items, strict=True))
    new = by_id.keys() - seen
    seen.update(new)
    return sum(map(sys.getsizeof, map(by_id.__getitem__, new)))


def held_bytes(root, exclude=()) -> int:
    """Bytes held by ``root``: tensors and numpy arrays by their storage, other objects by
    sys.getsizeof, walking attributes, containers and modules; objects in ``exclude`` (and what only
    they reach) are skipped."""
    seen = {id(x) for x in exclude}
    # An excluded tensor's storage is excluded with it: a view into it holds nothing new.
    storages = {x.untyped_storage().data_ptr() for x in exclude if isinstance(x, torch.Tensor)}
    total, stack = 0, [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, torch.Tensor):
            storage = obj.untyped_storage()
            if storage.data_ptr() not in storages:
                storages.add(storage.data_ptr())
                total += storage.nbytes()
        elif isinstance(obj, np.ndarray):
            base = obj if obj.base is None else obj.base
            if id(base) not in storages:
                storages.add(id(base))
                total += base.nbytes if isinstance(base, np.ndarray) else obj.nbytes
        elif isinstance(obj, ATOMS):
            total += sys.getsizeof(obj)
        elif isinstance(obj, dict):
            total += sys.getsizeof(obj) + _items(obj.keys(), seen, stack) + _items(obj.values(), seen, stack)
        elif isinstance(obj, list | tuple | set | frozenset):
            total += sys.getsizeof(obj) + _items(obj, seen, stack)
        elif isinstance(obj, torch.Generator) or callable(obj) and not hasattr(obj, "__dict__"):
            continue
        elif hasattr(obj, "__dict__") and not isinstance(obj, type):
            total += sys.getsizeof(obj)
            stack.append(vars(obj))
        elif hasattr(obj, "__slots__"):
            stack.extend(getattr(obj, s) for s in obj.__slots__ if hasattr(obj, s))
    return total


def drafter_megabytes(generation) -> float:
    """What a Generation's drafter adds to plain decoding, in MB (10^6 bytes): everything it holds
    except the target, its cache and the target's weights."""
    target = generation.target
    shared = (target, *target.held())  # TargetModel.held: its model, weights and cache
    return held_bytes(generation.drafter, exclude=shared) / 1e6
