"""Seed blueprints: the typed schema, the YAML loader with line numbers, lint rules and stats."""
