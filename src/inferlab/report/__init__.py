"""Presentation: console tables, matplotlib PNGs, the self-contained HTML report."""
