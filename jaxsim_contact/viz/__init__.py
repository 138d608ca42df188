"""Trajectory visualisation: self-contained HTML replays (three.js from a CDN)."""

from .html import to_html

__all__ = ["to_html"]
