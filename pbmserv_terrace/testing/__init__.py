"""Throwaway real servers (PostgreSQL, Dovecot) for the test suite and the benchmarks.

They run on 127.0.0.1 from a temporary directory and are removed afterwards; see
ARCHITECTURE.md "Components and how each starts".
"""
