"""Compiled (numba) versions of the hot loops: the LIBSVM reader and the replay loops.

Each gives exactly the numbers of the plain Python/numpy code it replaces (tests compare
them); numba caches the machine code on disk (``cache=True``), so only the first call in a
fresh checkout pays the compilation.
"""
