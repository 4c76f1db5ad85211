"""``python -m pbmserv_terrace`` is the same as the ``pbmserv-terrace`` command."""

from .cli.main import main

raise SystemExit(main())
