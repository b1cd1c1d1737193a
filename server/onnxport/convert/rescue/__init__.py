"""Rescue: a variant outside its budget brought back within it.

The error each node adds (node_errors.py, in pieces sized by value_sizes.py), and the fewest nodes kept in
float (fallback.py).
"""
