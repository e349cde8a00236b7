"""Faults injected on purpose (issue 16 §8)."""
