"""Thin views: authenticate, parse, call one service or selector, render."""
