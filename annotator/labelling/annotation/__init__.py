"""Annotation: what an annotator does (lease, label, skip, undo, change a recent label)."""
