"""Game types other than Terrace itself, each a pure rules core (no I/O, standard library only).

- :mod:`.patience` — Terrace patience, a double-deck solitaire in seven variants.
"""
