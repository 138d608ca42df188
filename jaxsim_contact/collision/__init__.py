"""Collision detection (filled in below)."""
