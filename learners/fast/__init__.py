"""Compiled (numba) versions of the replay loops of the binary PAA family and D-ADA / D-AMD.

Each gives exactly the numbers of the plain Python/numpy code it replaces (tests compare
them); numba caches the machine code on disk (``cache=True``), so only the first call in a
fresh checkout pays the compilation.
"""
