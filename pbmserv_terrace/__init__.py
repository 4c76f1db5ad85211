"""pbmserv-terrace: a play-by-email server for Terrace and other board games.

``__version__`` is the one version source: the package metadata (pyproject.toml,
hatch's version source), ``pbmserv-terrace --version`` and the ``build_info``
metric on ``/metrics`` all read it.  CHANGELOG.md says what each version brought."""

__version__ = "0.9.0"
