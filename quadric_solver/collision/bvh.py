"""A static bounding-volume hierarchy over boxes (the triangles of mesh colliders): build once, query often.

Built top down: a node's items are split at the median of their centres along the longest
side of the centres' bounds, until a leaf holds at most LEAF items. Nodes are stored in
depth-first order, so a node's first child is the next node; ``skip`` is the node after its
subtree, and a query walks the array without a stack (Smits' skip pointers): into a node whose
box meets the query box, past its subtree otherwise.
"""
from typing import NamedTuple

import numpy as np
from numba import njit

from ..math3d import JIT

LEAF = 4


class Hierarchy(NamedTuple):
    low: np.ndarray    # (K, 3) node box corners
    high: np.ndarray   # (K, 3)
    skip: np.ndarray   # (K,) int64: the node after this node's subtree
    first: np.ndarray  # (K,) int64: a leaf's first row in ``item``
    count: np.ndarray  # (K,) int64: a leaf's item count; 0 for inner nodes
    item: np.ndarray   # (M,) int64 the items, leaf by leaf


@njit(**JIT)
def _build(low, high):
    """Arrays of a Hierarchy over the boxes (low[i], high[i])."""
    n = low.shape[0]
    centre = 0.5 * (low + high)
    item = np.arange(n)
    capacity = max(1, 2 * n)
    node_first = np.zeros(capacity, dtype=np.int64)
    node_count = np.zeros(capacity, dtype=np.int64)
    node_end = np.zeros(capacity, dtype=np.int64)
    second = np.full(capacity, -1, dtype=np.int64)  # an inner node's second child
    stack = np.empty((capacity, 3), dtype=np.int64)  # (start, end, parent whose second child this is or -1)
    stack[0, 0], stack[0, 1], stack[0, 2] = 0, n, -1
    top = 1
    nodes = 0
    while top > 0:
        top -= 1
        start, end, parent = stack[top, 0], stack[top, 1], stack[top, 2]
        node = nodes
        nodes += 1
        if parent >= 0:
            second[parent] = node
        node_first[node] = start
        node_end[node] = end
        if end - start <= LEAF:
            node_count[node] = end - start
            continue
        axis, widest = 0, -1.0
        for k in range(3):
            width = centre[item[start:end], k].max() - centre[item[start:end], k].min()
            if width > widest:
                axis, widest = k, width
        order = np.argsort(centre[item[start:end], axis], kind="mergesort")
        item[start:end] = item[start:end][order]
        middle = (start + end) // 2
        # the second half waits below the first, which is built next: depth-first order
        stack[top, 0], stack[top, 1], stack[top, 2] = middle, end, node
        stack[top + 1, 0], stack[top + 1, 1], stack[top + 1, 2] = start, middle, -1
        top += 2
    node_low = np.empty((nodes, 3))
    node_high = np.empty((nodes, 3))
    skip = np.empty(nodes, dtype=np.int64)
    # children come after their parent: fill boxes and subtree ends from the last node back
    for node in range(nodes - 1, -1, -1):
        if node_count[node] > 0 or second[node] < 0:
            skip[node] = node + 1
            for k in range(3):
                node_low[node, k] = np.inf
                node_high[node, k] = -np.inf
            for r in range(node_first[node], node_end[node]):
                for k in range(3):
                    node_low[node, k] = min(node_low[node, k], low[item[r], k])
                    node_high[node, k] = max(node_high[node, k], high[item[r], k])
        else:
            skip[node] = skip[second[node]]
            for k in range(3):
                node_low[node, k] = min(node_low[node + 1, k], node_low[second[node], k])
                node_high[node, k] = max(node_high[node + 1, k], node_high[second[node], k])
    return node_low, node_high, skip, node_first[:nodes].copy(), node_count[:nodes].copy(), item


def build_hierarchy(low: np.ndarray, high: np.ndarray) -> Hierarchy:
    """The Hierarchy over boxes (low[i], high[i]), i = 0..n-1."""
    low = np.ascontiguousarray(low, dtype=np.float64).reshape(-1, 3)
    high = np.ascontiguousarray(high, dtype=np.float64).reshape(-1, 3)
    if len(low) == 0:
        return Hierarchy(np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0, np.int64), np.zeros(0, np.int64),
                         np.zeros(0, np.int64), np.zeros(0, np.int64))
    return Hierarchy(*_build(low, high))


@njit(**JIT)
def query(low, high, skip, first, leaf_count, item, lx, ly, lz, hx, hy, hz, found):
    """The items of the leaves whose boxes meet the box (l, h), in increasing order, into ``found``; their count.

    The first six arguments are a Hierarchy's arrays (compiled code takes them one by one: a parallel
    loop cannot pass a tuple of tuples). ``found`` may be too small: it is then replaced by a larger
    array, returned as the second value.
    """
    count = 0
    node = 0
    nodes = low.shape[0]
    while node < nodes:
        if (low[node, 0] > hx or high[node, 0] < lx or low[node, 1] > hy or high[node, 1] < ly
                or low[node, 2] > hz or high[node, 2] < lz):
            node = skip[node]
            continue
        if leaf_count[node] > 0:
            for r in range(first[node], first[node] + leaf_count[node]):
                if count == found.shape[0]:
                    larger = np.empty(2 * found.shape[0] + 16, dtype=np.int64)
                    larger[:count] = found[:count]
                    found = larger
                found[count] = item[r]
                count += 1
        node += 1
    found[:count].sort()
    return count, found
