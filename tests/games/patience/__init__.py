"""Tests of Terrace patience (pbmserv_terrace.games.patience)."""
