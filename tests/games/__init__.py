"""Tests of the game types in pbmserv_terrace.games."""
